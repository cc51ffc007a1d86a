"""The tools a lab acts through, declared once; `invoke` runs one and says what happened."""
