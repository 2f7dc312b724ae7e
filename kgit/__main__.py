from kgit.cli import run

run()
