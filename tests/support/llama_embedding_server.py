"""Run llama-cpp-python's OpenAI-compatible server with mean-pooled embeddings (run with .venv-llm's python).

SmolLM2's GGUF declares no pooling, so llama.cpp would answer /v1/embeddings with one vector per token;
the server has no option for it, so this launcher sets mean pooling on every model it loads and then
hands over to the stock server entry point with the same command-line arguments.
"""

import functools
import sys

import llama_cpp
import llama_cpp.server.__main__ as server_main

_init = llama_cpp.Llama.__init__


@functools.wraps(_init)
def _init_mean_pooled(self: llama_cpp.Llama, *args: object, **kwargs: object) -> None:
    kwargs.setdefault("pooling_type", llama_cpp.LLAMA_POOLING_TYPE_MEAN)
    _init(self, *args, **kwargs)


llama_cpp.Llama.__init__ = _init_mean_pooled

if __name__ == "__main__":
    sys.argv[0] = "llama_cpp.server"
    server_main.main()
