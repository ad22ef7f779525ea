# Generated from lumen/page.py by `make stubs`: given code, nothing to write here.
# Learners: read it, run it, no need to change it. Course staff: edit lumen/page.py.
"""The chapter's interactive figures on one offline page, computed by one package's code.

    python -m exercises explore --out explore.html

``build(impl)`` runs the package's functions and collects what the page shows (the toy
sentence's one-hot vectors, rows and dense vectors; the word map's cosines and analogies; each
model's ``count_params``); ``write`` puts it, as JSON, into page.html: one file with its own
script and style, no network, no server. The calculator's sliders are the page's own
JavaScript, the same formula as count_params; next to each preset the page shows what the
package's count_params says, so a learner sees the two agree (or not).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from .figures import PLACEHOLDER_NOTE, toy_table
from .live import (
    LLAMA3_8B,
    MODELS,
    PUBLISHED_TIED,
    TOY_ANALOGY,
    TOY_SENTENCE,
    TOY_VOCAB,
    Impl,
    count_model,
    model_shape,
    toy_map,
)
from .sections import skip_note

TEMPLATE = Path(__file__).with_name("page.html")
DATA_MARK = "/*DATA*/null"  # where the JSON goes, inside <script type="application/json">
COUNT_FIELDS = ("token_embedding", "position_embedding", "attention", "mlp", "layer_norms",
                "final_norm", "lm_head", "total")


def _tokens(impl: Impl) -> dict[str, Any]:
    """The toy sentence: ids, each token's one-hot vector, E, and one_hot @ E."""
    ids = torch.tensor([TOY_VOCAB.index(w) for w in TOY_SENTENCE])  # (T,)
    emb = toy_table(impl)
    with torch.set_grad_enabled(False):
        E = emb.weight.detach().clone()  # (5, 8)
        lookup = emb(ids)  # (T, 8)
        onehot = impl.embeddings.one_hot(ids, len(TOY_VOCAB))  # (T, 5)
        dense = impl.embeddings.embed_via_onehot(E, ids)  # (T, 8)
    text = " ".join(TOY_SENTENCE)
    gpt2_ids = impl.tokenizer.encode(text)
    return {"sentence": list(TOY_SENTENCE), "vocab": list(TOY_VOCAB), "ids": ids.tolist(),
            "E": E.tolist(), "onehot": onehot.tolist(), "dense": dense.tolist(),
            "lookup_equal": bool(torch.equal(lookup, dense)), "text": text,
            "gpt2": {"ids": gpt2_ids, "pieces": impl.tokenizer.token_strings(gpt2_ids)}}


def _map(impl: Impl) -> dict[str, Any]:
    """The word map: every pair's cosine, and every analogy's answer, by the package's code."""
    words, clusters, xy = toy_map()
    E = torch.tensor(xy)  # (n, 2)
    n = len(words)
    with torch.set_grad_enabled(False):
        cosine = impl.embeddings.cosine_similarity(E[:, None, :], E[None, :, :])  # (n, n)
        # Every a : b :: c : ? at once: the word nearest to b - a + c by cosine, the inputs
        # excluded (as analogy does; argmax keeps the smaller id on a tie, as _top_k does).
        a, b, c = torch.meshgrid(torch.arange(n), torch.arange(n), torch.arange(n),
                                 indexing="ij")
        a, b, c = a.flatten(), b.flatten(), c.flatten()  # (n^3,)
        target = E[b] - E[a] + E[c]  # (n^3, 2)
        sims = impl.embeddings.cosine_similarity(target[:, None, :], E[None, :, :])  # (n^3, n)
        rows = torch.arange(n**3)
        for excluded in (a, b, c):
            sims[rows, excluded] = -torch.inf
        answers = sims.argmax(dim=1)
        answers[(a == b) | (b == c) | (a == c)] = -1  # three different words only
        headline = {}
        i, j, k = (words.index(w) for w in TOY_ANALOGY)
        for exclude in (True, False):
            found, sim = impl.embeddings.analogy(E, i, j, k, 1, exclude)
            headline["excluded" if exclude else "kept"] = [words[int(found[0])], float(sim[0])]
    return {"words": words, "clusters": clusters, "xy": [list(p) for p in xy],
            "cosine": [[round(float(v), 6) for v in row] for row in cosine],
            "analogy": answers.tolist(), "headline": {"inputs": list(TOY_ANALOGY), **headline}}


def _counts(impl: Impl, name: str, tied: bool) -> dict[str, int]:
    count = count_model(impl, name, tied)
    values = (count.token_embedding, count.position_embedding, count.attention, count.mlp,
              count.layer_norms, count.final_norm, count.lm_head, count.total)
    return {field: int(v) for field, v in zip(COUNT_FIELDS, values, strict=True)}


def _calculator(impl: Impl) -> tuple[dict[str, Any], list[str]]:
    """Each model's shape, and the package's counts of it tied and untied (None: a stub)."""
    presets: dict[str, Any] = {}
    notes: list[str] = []
    for name in MODELS:
        shape = model_shape(impl, name)
        entry: dict[str, Any] = {
            "arch": "llama" if name == "llama3-8b" else "gpt2", "tied": PUBLISHED_TIED[name],
            "vocab_size": shape["vocab_size"], "d_model": shape["d_model"],
            "n_layers": shape["n_layers"], "n_ctx": shape["n_ctx"], "counts": None,
        }
        try:
            entry["counts"] = {"tied": _counts(impl, name, True),
                               "untied": _counts(impl, name, False)}
        except NotImplementedError as error:
            if not notes:
                notes.append(skip_note(error, "params"))
        presets[name] = entry
    llama = {k: LLAMA3_8B[k] for k in ("n_heads", "n_kv_heads", "d_ff")}
    return {"presets": presets, "llama": llama}, notes


def build(impl: Impl) -> dict[str, Any]:
    """Everything the page shows, computed by ``impl``; a part whose stage is still a stub is
    None, and ``skipped`` holds the line that names it."""
    data: dict[str, Any] = {"impl": impl.package, "skipped": [], "notes": {}}
    for key, part, stage in (("tokens", _tokens, "onehot"), ("map", _map, "neighbours")):
        try:  # the lookup ends in scale_output (stage 'init'): placeholders until it is written
            with impl.explore.placeholders_until_init() as fell_back:
                data[key] = part(impl)
            if fell_back:
                data["skipped"].append(f"{key}: {PLACEHOLDER_NOTE}")
        except NotImplementedError as error:
            data[key] = None
            note = skip_note(error, stage)
            data["notes"][key] = note
            data["skipped"].append(note)
    if data["map"] is None:  # the map itself is given: show it, without cosines
        words, clusters, xy = toy_map()
        data["map"] = {"words": words, "clusters": clusters, "xy": [list(p) for p in xy],
                       "cosine": None, "analogy": None, "headline": None}
    data["calc"], notes = _calculator(impl)
    if notes:
        data["notes"]["calc"] = notes[0]
        data["skipped"].extend(notes)
    return data


def render(data: dict[str, Any]) -> str:
    """page.html with ``data`` in it (``</`` escaped, so no string can end the script)."""
    template = TEMPLATE.read_text(encoding="utf-8")
    template = template[template.index("<!DOCTYPE html>"):]  # after any generated header
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    if DATA_MARK not in template:
        raise ValueError(f"{TEMPLATE} has no {DATA_MARK} for the data")
    return template.replace(DATA_MARK, payload)


def write(impl: Impl, path: Path) -> dict[str, Any]:
    """Build the page from ``impl`` and write it to ``path``; returns the data it holds."""
    data = build(impl)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(data), encoding="utf-8")
    return data
