// The backup module: see README in this folder.
