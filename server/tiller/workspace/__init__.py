"""The workspace layer: the tools and their sandbox, checkpoints (the shadow repository, its
writer and keeper) and the session store."""
