# Vendored subset (kgit test fixture): upstream's ops/__init__.py re-exports every op of the
# library; only the SwiGLU is vendored here.
