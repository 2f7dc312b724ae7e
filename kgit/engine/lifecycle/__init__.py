"""A campaign's life outside its rounds: define, init, baseline, import, doctor and delete."""
