"""Rounds: their branch and start, validate, accept, rollback and revise, the finish, and the `kgit worker` loop that runs them from a queue."""
