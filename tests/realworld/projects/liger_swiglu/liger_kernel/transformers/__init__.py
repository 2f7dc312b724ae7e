# Vendored subset (kgit test fixture): upstream's transformers/__init__.py imports the model
# patches (and with them HuggingFace transformers); only the SwiGLU modules are vendored here.
