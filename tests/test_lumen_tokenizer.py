"""lumen/tokenizer.py, GPT-2's tokenizer offline, against GPT-2's own files and Hugging Face.

- the packaged ``vocab.bpe`` and ``encoder.json`` against the SHA-256 hashes that tiktoken
  publishes for "gpt2" (read from tiktoken's source, never fetched),
- known ids (the chapter's "The cat sat" -> [464, 3797, 3332]) and ``encoder.json`` itself,
- every encoding against Hugging Face's GPT2Tokenizer built from the same two files (a second,
  independent BPE implementation), and decode(encode(text)) == text, on Hypothesis' texts.

``tiktoken.get_encoding("gpt2")`` is never called: it would download the files.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from types import ModuleType

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lumen.tokenizer import (
    ENCODER_JSON_SHA256,
    ENDOFTEXT,
    VOCAB_BPE_SHA256,
    decode,
    encode,
    gpt2_encoding,
    token_strings,
    vocab_dir,
)

KNOWN = {
    "The cat sat": [464, 3797, 3332],
    "the": [1169],
    " the": [262],
    "Hello world": [15496, 995],
    " Hello world": [18435, 995],
}


def sha256(name: str) -> str:
    return hashlib.sha256((vocab_dir() / name).read_bytes()).hexdigest()


def test_packaged_files_have_the_published_hashes() -> None:
    assert sha256("vocab.bpe") == VOCAB_BPE_SHA256
    assert sha256("encoder.json") == ENCODER_JSON_SHA256
    # The constants are the ones tiktoken itself checks for "gpt2" (its source, not a download).
    from tiktoken_ext import openai_public

    source = inspect.getsource(openai_public.gpt2)
    assert VOCAB_BPE_SHA256 in source and ENCODER_JSON_SHA256 in source


@pytest.mark.parametrize("text", list(KNOWN))
def test_known_ids(text: str) -> None:
    assert encode(text) == KNOWN[text]
    assert decode(KNOWN[text]) == text


def test_vocabulary_size_and_end_of_text() -> None:
    encoding = gpt2_encoding()
    assert encoding.n_vocab == 50257
    assert encoding.eot_token == 50256
    assert decode([50256]) == ENDOFTEXT
    assert gpt2_encoding() is encoding, "built once"


def test_single_tokens_agree_with_encoder_json() -> None:
    # encoder.json spells a leading space as "\u0120" (GPT-2's byte-to-unicode map).
    vocabulary = json.loads((vocab_dir() / "encoder.json").read_text(encoding="utf-8"))
    assert len(vocabulary) == 50257
    for word in ("cat", "dog", "king", "queen", "sat"):
        assert encode(" " + word) == [vocabulary["\u0120" + word]]
    for word in ("The", "the", "cat", "Hello", "world"):
        assert encode(word) == [vocabulary[word]]
    assert token_strings([464, 3797, 3332]) == ["The", " cat", " sat"]


@pytest.fixture(scope="module")
def hf_tokenizer() -> object:
    transformers: ModuleType = pytest.importorskip("transformers")
    folder = vocab_dir()
    return transformers.GPT2Tokenizer(
        vocab=str(folder / "encoder.json"), merges=str(folder / "vocab.bpe")
    )


def test_known_ids_agree_with_hugging_face(hf_tokenizer: object) -> None:
    for text, ids in KNOWN.items():
        assert hf_tokenizer.encode(text) == ids


@settings(max_examples=150, deadline=None)
@given(text=st.text(st.characters(codec="utf-8"), max_size=60))
def test_any_text_encodes_like_hugging_face_and_round_trips(
    hf_tokenizer: object, text: str
) -> None:
    assume(ENDOFTEXT not in text)  # special-token text is refused by design (tiktoken's default)
    ids = encode(text)
    assert ids == hf_tokenizer.encode(text)
    assert all(0 <= i < 50256 for i in ids)
    assert decode(ids) == text


def test_the_encoding_is_built_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken
    import tiktoken.load

    read_file = tiktoken.load.read_file

    def local_only(path: str) -> bytes:
        assert "://" not in path, f"tried to fetch {path}"
        return read_file(path)

    def no_download(name: str) -> None:
        raise AssertionError(f"tiktoken.get_encoding({name!r}) would download")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # no cache: every file goes through read_file
    monkeypatch.setattr(tiktoken.load, "read_file", local_only)
    monkeypatch.setattr(tiktoken, "get_encoding", no_download)
    gpt2_encoding.cache_clear()
    try:
        assert encode("The cat sat") == [464, 3797, 3332]
    finally:
        gpt2_encoding.cache_clear()  # the next caller builds it again, unpatched
