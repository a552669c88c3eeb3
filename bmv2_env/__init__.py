"""Bring a switch target (p4sim or BMv2) up and down, and control it the same way for both."""
