"""What each run_* script does, as library functions tests can call."""
