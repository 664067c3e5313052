"""Presentation: the summary as the terminal scoreboard, ``REPORT.md``, ``REPORT.html``, the plots and the
comparison of evidence folders. Formats what analysis computed; computes nothing of its own."""
