"""Grading: pure functions from one record to its verdict (why an answer is right, wrong or unreadable)."""
