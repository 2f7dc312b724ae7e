"""The campaign's data: manifest, stored note formats, the frozen CSV schema. No git, no I/O."""
