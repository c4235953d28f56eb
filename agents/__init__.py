"""Opponents and players for the game scripts (code game, SPIRAL). Filled in by the game issues."""
