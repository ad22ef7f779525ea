"""The offline page (lumen/page.py, lumen/page.html), in a real browser with the network off.

What the page holds is checked against PyTorch's built-ins and count_params; then headless
Chromium (Debian's ``chromium``, driven by Playwright) opens the file offline: nothing is
fetched, clicking a token lines up its one-hot vector, row of E and dense vector, clicking
words gives their cosine and an analogy, and the calculator's numbers equal count_params for
every preset, tied and untied, and for a shape of the sliders. The page of the untouched stubs
says which stage is missing, and a package whose count_params is wrong sees it disagree.

Chromium comes from ``make setup-dev`` (apt-get, as root). Where it cannot be installed (not
root, no apt-get) the browser tests skip, saying so; in CI (``$CI`` set) or where it could be
installed, a missing Chromium fails them.
"""

from __future__ import annotations

import math
import os
import random
import re
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from lumen import page
from lumen.live import LLAMA3_8B, MODELS, PUBLISHED_TIED, llama_count, load_impl, toy_map
from lumen.params import PRESETS, count_params
from lumen.stages import SUBMISSION_FILES
from tests.variants.build import LUMEN, make_submission
from tests.variants.params import MISTAKES

FIELDS = page.COUNT_FIELDS


def reference_count(name: str, tied: bool) -> dict[str, int]:
    """count_params (lumen's, tested against the published sizes) or Llama 3's own count."""
    if name == "llama3-8b":
        import lumen.params

        c = llama_count(lumen.params, tied)
    else:
        shape = {k: v for k, v in PRESETS[name].items() if k != "n_heads"}
        c = count_params(**shape, tied=tied)
    return {f: int(getattr(c, f)) for f in FIELDS}


@pytest.fixture(scope="module")
def lumen_page(tmp_path_factory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("page") / "explore.html"
    return path, page.write(load_impl("lumen"), path)


def test_the_page_holds_the_packages_own_numbers(lumen_page):
    _, data = lumen_page
    assert data["impl"] == "lumen" and data["skipped"] == []
    T = data["tokens"]
    torch.manual_seed(0)
    E = torch.empty(5, 8).normal_(0.0, 0.02)  # Embedding(5, 8) after seed 0
    ids = torch.tensor(T["ids"])
    assert T["E"] == E.tolist()
    assert T["onehot"] == F.one_hot(ids, 5).float().tolist()
    assert T["dense"] == E[ids].tolist() and T["lookup_equal"]
    assert T["gpt2"]["ids"] == [1169, 3797, 3332, 319, 262, 2603]  # "the cat sat on the mat"
    M = data["map"]
    words, _, xy = toy_map()
    X = torch.tensor(xy)
    expected = F.cosine_similarity(X[:, None], X[None], dim=-1)
    torch.testing.assert_close(torch.tensor(M["cosine"]), expected, atol=1e-5, rtol=0)
    lumen = load_impl("lumen")
    n = len(words)
    triples = random.Random(0).sample(
        [(a, b, c) for a in range(n) for b in range(n) for c in range(n)
         if len({a, b, c}) == 3], 150)
    for a, b, c in triples:
        ids, _ = lumen.embeddings.analogy(X, a, b, c, 1)
        assert M["analogy"][(a * n + b) * n + c] == int(ids[0]), (words[a], words[b], words[c])
    assert M["headline"]["excluded"][0] == "queen"
    for name in MODELS:
        counts = data["calc"]["presets"][name]["counts"]
        for tied in (True, False):
            assert counts["tied" if tied else "untied"] == reference_count(name, tied)
    assert reference_count("llama3-8b", False)["total"] == 8_030_261_248


def test_the_page_is_one_file_that_fetches_nothing(lumen_page):
    path, _ = lumen_page
    html = path.read_text(encoding="utf-8")
    assert "default-src 'none'" in html  # the page's own policy: no request can leave it
    assert not re.search(r"<link|<img|<iframe|@import|url\((?!#)|\bsrc=|\bhref=", html)
    assert set(re.findall(r"https?://[^\s\"']+", html)) <= {"http://www.w3.org/2000/svg"}


# In the browser


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    could_install = os.geteuid() == 0 and shutil.which("apt-get")
    if os.environ.get("CI") or could_install:
        pytest.fail("chromium is missing: `make setup-dev` installs it (apt-get install chromium)")
    pytest.skip("no chromium, and no way to install it here (needs root and apt-get): "
                "`apt-get install chromium` as root, then rerun")


@pytest.fixture(scope="module")
def browser():
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("playwright is a dev requirement: pip install -r requirements-dev.txt")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def open_page(browser):
    """Open a page file offline; every request the page makes is recorded and refused."""
    contexts = []

    def opener(path: Path):
        context = browser.new_context(offline=True, viewport={"width": 1240, "height": 900})
        contexts.append(context)
        tab = context.new_page()
        tab.requests, tab.errors = [], []
        tab.on("request", lambda r: tab.requests.append(r.url))
        tab.on("pageerror", lambda e: tab.errors.append(str(e)))
        tab.on("console", lambda m: tab.errors.append(m.text) if m.type == "error" else None)
        context.route(re.compile(r"^(?!file:).*"), lambda route: route.abort())
        tab.goto(path.resolve().as_uri())
        return tab

    yield opener
    for context in contexts:
        context.close()


def _values(tab, selector: str) -> list[float]:
    return [float(v) for v in tab.eval_on_selector_all(
        selector, "cells => cells.map(c => c.dataset.value)")]


def _calculator(tab) -> dict[str, int]:
    return {f: int(tab.get_attribute(f"#calc-{f}", "data-value")) for f in FIELDS}


def test_clicks_change_what_the_page_shows(lumen_page, open_page, tmp_path):
    path, data = lumen_page
    tab = open_page(path)
    assert tab.requests == [path.resolve().as_uri()] and not tab.errors
    T = data["tokens"]
    for t in (5, 2):  # "mat", then "sat"
        tab.click(f"[data-t='{t}']")
        i = T["ids"][t]
        assert _values(tab, "#picked-row td") == pytest.approx(T["E"][i])
        assert _values(tab, "#dense-row td") == pytest.approx(T["E"][i])
        assert _values(tab, "#onehot td") == [1.0 if k == i else 0.0 for k in range(5)]
        assert tab.inner_text("#onehot td.one") == "1"
        assert f"is id {i}: one_hot({i}) @ E = row {i}" in tab.inner_text("#lookup-equation")
    words, _, xy = toy_map()
    X = torch.tensor(xy)
    tab.click("#word-cat circle")
    tab.click("#word-dog circle")
    cosine = float(F.cosine_similarity(X[words.index("cat")], X[words.index("dog")], dim=0))
    assert float(tab.get_attribute("#cosine-value", "data-value")) == pytest.approx(cosine, 1e-5)
    assert "cos(cat, dog)" in tab.inner_text("#map-readout")
    tab.click("#map-clear")
    for word in ("man", "king", "woman"):
        tab.click(f"#word-{word} circle")
    assert tab.inner_text("#analogy-answer") == "queen"
    assert tab.get_attribute("#word-queen", "class") == "word answer"
    tab.click("#word-france circle")  # a fourth click starts again
    assert tab.inner_text("#map-readout").startswith("france")
    tab.screenshot(path=str(tmp_path / "page.png"), full_page=True)
    assert not tab.errors and len(tab.requests) == 1


def test_the_calculator_equals_count_params_for_every_preset(lumen_page, open_page):
    path, _ = lumen_page
    tab = open_page(path)
    for name in MODELS:
        tab.click(f"#preset-{name}")
        for tied in (PUBLISHED_TIED[name], not PUBLISHED_TIED[name]):
            if tab.is_checked("#in-tied") != tied:
                tab.click("#in-tied")
            shown = _calculator(tab)
            assert shown == reference_count(name, tied), (name, tied)
            assert int(tab.get_attribute("#calc-mem-4", "data-value")) == 4 * shown["total"]
            assert int(tab.get_attribute("#calc-mem-2", "data-value")) == 2 * shown["total"]
            assert tab.inner_text("#calc-total") == f"{shown['total']:,}"
            assert tab.inner_text("#calc-agrees") == "= this page's count"
    tab.click("#preset-gpt2")
    for slider, value in (("#in-V", 32000), ("#in-d", 512), ("#in-N", 8)):
        tab.eval_on_selector(
            slider, "(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", value)
    assert _calculator(tab) == {f: int(getattr(count_params(32000, 512, 8, 1024), f))
                                for f in FIELDS}
    assert tab.inner_text("#out-V") == "32,000"
    assert "pick a model" in tab.inner_text("#calc-check")
    assert LLAMA3_8B["d_ff"] == 14336 and not tab.errors


def test_the_stubs_page_names_the_missing_stages(open_page, tmp_path):
    path = tmp_path / "stubs.html"
    data = page.write(load_impl("exercises"), path)
    assert len(data["skipped"]) == 3
    tab = open_page(path)
    notes = tab.inner_text("#skipped")
    for stage in ("embedding", "neighbours", "params"):
        assert f"stage '{stage}' not implemented yet" in notes
    assert "Embedding.__init__ is still a stub" in tab.inner_text("#lookup")
    tab.click("#word-cat circle")
    assert "cosine_similarity is still a stub" in tab.inner_text("#map-readout")
    assert _calculator(tab) == reference_count("gpt2", True)  # the page's own formula works
    assert "count_params is still a stub" in tab.inner_text("#calc-check")
    assert not tab.errors


def test_the_page_shows_the_chosen_packages_numbers(open_page, tmp_path, monkeypatch):
    """A package whose count_params drops the layer norms: the page says it disagrees."""
    package = tmp_path / "mistaken"
    replacements, _, _ = MISTAKES["layer norms dropped"]
    make_submission(package, replacements)
    for given in LUMEN.iterdir():
        if given.is_file() and given.name not in SUBMISSION_FILES:
            shutil.copy(given, package / given.name)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "mistaken.html"
    data = page.write(load_impl("mistaken"), path)
    assert data["impl"] == "mistaken"
    tab = open_page(path)
    assert tab.inner_text("#impl") == "mistaken"
    assert tab.inner_text("#calc-agrees") == "differs from this page's count"
    mine = data["calc"]["presets"]["gpt2"]["counts"]["tied"]["total"]
    assert mine != reference_count("gpt2", True)["total"]
    assert f"{mine:,}" in tab.inner_text("#calc-check")
    assert math.isfinite(mine) and not tab.errors
