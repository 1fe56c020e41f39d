"""What a process running gboost needs beyond the library: start-up of the commands, numba's cache
folder, the compile guard for threaded hosts and the watch that counts what a piece of work compiles."""
