"""Sharing: a campaign's record between clones, through push, pull and publish."""
