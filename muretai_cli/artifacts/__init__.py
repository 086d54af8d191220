"""Artifacts built on the seam: A2A messages, contact grants, org memberships, handoffs."""
