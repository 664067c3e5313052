"""The PNG plots beside ``REPORT.md``, each drawn from the typed summary alone."""
