from muretai_cli.cli import main

main()
