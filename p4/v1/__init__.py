"""See p4/__init__.py: canonical names for finsy's generated P4Runtime modules."""
