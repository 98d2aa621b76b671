"""Comparison tables (issue 36): cells are quotes from the paper with a valid citation (page and highlight
boxes for a PDF, the abstract otherwise), "not stated" cells carry nothing, the cell cache, the formats, the
CLI's errors, and an LLM's short value kept only when the quote supports it. Over the MiniLM library of 300
real abstracts and five real PDFs."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from paperchat.assistant import Assistant
from paperchat.cli import main
from paperchat.library import Library
from paperchat.tables.builder import TableBuilder
from paperchat.tables.cache import CellCache
from paperchat.tables.cells import FEATURES, CellModel, answers
from paperchat.tables.columns import MAX_PAPERS, PRESETS, Column, column_of, value_supported
from tests.fake_llm import FakeLLM

PDF_PAPER = "2005.11401"  # RAG: a stored PDF in the library


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _page_text(lib: Library, pid: str, page: int) -> str:
    chunks = lib.store.get_chunks(lib.store.ids_of_paper(pid, "pdf"))
    return " ".join(c.text for c in sorted(chunks.values(), key=lambda c: c.start) if c.page == page)


@pytest.fixture
def core(built_library: Library) -> Assistant:
    return Assistant(built_library.settings, built_library)


def test_cells_quote_the_paper_and_cite_where(core: Assistant) -> None:
    lib = core.library
    abstract_only = next(p for p in lib.catalog.topic_papers("rag") if not lib.catalog.get(p).pdf_path)  # type: ignore[union-attr]
    # preset columns (read by the cell picker) and a question of one's own (read by the sentence reader)
    cols = [column_of("Datasets"), column_of("Code"), column_of("Which decoding method is used?")]
    assert CellModel.load() is not None  # the shipped cell picker
    table = TableBuilder(core).build([PDF_PAPER, abstract_only], cols)
    assert [p for p, _ in table.papers] == [PDF_PAPER, abstract_only] and len(table.cells) == 6
    stated = [c for c in table.cells.values() if not c.not_stated]
    assert stated
    for cell in table.cells.values():
        if cell.not_stated:
            assert cell.quote == "" and cell.citation() == "" and cell.text() == "not stated"
            continue
        if cell.page is None:  # the abstract
            paper = lib.catalog.get(cell.paper_id)
            assert paper is not None and _norm(cell.quote) in _norm(paper.title + " " + paper.abstract)
            assert cell.citation() == "abstract" and not cell.boxes
        else:
            assert cell.paper_id == PDF_PAPER and _norm(cell.quote) in _norm(_page_text(lib, PDF_PAPER, cell.page))
            assert cell.citation() == f"p. {cell.page}" and cell.boxes and cell.page_size  # highlight boxes for --json
        assert cell.reader is not None
    assert any(c.page is not None for c in table.cells.values() if c.paper_id == PDF_PAPER and not c.not_stated)
    # formats: every cell in Markdown and CSV, with its citation; JSON carries boxes
    md = table.to_markdown()
    assert md.count("\n") == 3 and "| Paper | Datasets | Code | Which decoding method is used |" in md
    rows = list(csv.reader(io.StringIO(table.to_csv())))
    assert rows[0][:4] == ["paper_id", "title", "Datasets", "Datasets (citation)"] and len(rows) == 3
    js = table.to_json()
    assert {r["paper_id"] for r in js["rows"]} == {PDF_PAPER, abstract_only}
    assert all(set(c) >= {"quote", "page", "boxes", "not_stated", "low_confidence", "citation"} for r in js["rows"] for c in r["cells"].values())


def test_cells_are_cached_per_column(core: Assistant, tmp_path: Path) -> None:
    cache = CellCache(tmp_path / "tables.sqlite")
    b = TableBuilder(core, cache=cache)
    first = b.build([PDF_PAPER], [column_of("Datasets")])
    assert not any(c.cached for c in first.cells.values())
    again = TableBuilder(core, cache=cache).build([PDF_PAPER], [column_of("Datasets"), column_of("Compute")])
    assert again.cell(PDF_PAPER, "Datasets").cached and not again.cell(PDF_PAPER, "Compute").cached
    assert again.cell(PDF_PAPER, "Datasets").quote == first.cell(PDF_PAPER, "Datasets").quote
    assert again.sorted_by("Compute") and again.sorted_by(None) == again.papers


def test_column_parsing_and_value_support() -> None:
    assert column_of("datasets") == next(c for c in PRESETS["empirical"] if c.name == "Datasets")
    assert column_of("Retriever=Which retriever is used?") == Column("Retriever", "Which retriever is used?")
    assert column_of("Which retriever is used?").name == "Which retriever is used"
    assert column_of("learning rate").question == "What is the learning rate of this paper?"
    with pytest.raises(Exception, match="empty"):
        column_of("  ")
    quote = "We train on Natural Questions and TriviaQA with 8 V100 GPUs."
    assert value_supported("Natural Questions, TriviaQA", quote)
    assert not value_supported("SQuAD and Natural Questions", quote)  # SQuAD is not in the quote
    assert not value_supported("", quote)
    assert not value_supported(" ".join(["TriviaQA"] * 13), quote)  # longer than 12 words


def test_llm_short_value_is_kept_only_when_the_quote_holds_it(core: Assistant, tmp_path: Path) -> None:
    with FakeLLM("Natural Questions") as llm:
        settings = core.settings.model_copy(update={"answerer": "openai:fake", "llm_base_url": llm.url})
        c2 = Assistant(settings, core.library)
        b = TableBuilder(c2, cache=CellCache(tmp_path / "t.sqlite"))
        cell = b.cell(PDF_PAPER, column_of("Datasets"))
        if not cell.not_stated:
            assert llm.requests and "<source>" in json.dumps(llm.requests[-1])
            assert cell.value == ("Natural Questions" if value_supported("Natural Questions", cell.quote) else "")
    with FakeLLM("The moon landing dataset") as llm:  # never in a quote: dropped, the quote stands
        settings = core.settings.model_copy(update={"answerer": "openai:fake", "llm_base_url": llm.url})
        b = TableBuilder(Assistant(settings, core.library), cache=CellCache(tmp_path / "u.sqlite"))
        cell = b.cell(PDF_PAPER, column_of("Datasets"))
        assert cell.value == "" and (cell.not_stated or cell.text() == cell.quote)


def test_cli_table_and_its_errors(built_library: Library, capsys: pytest.CaptureFixture[str]) -> None:
    data = ["--data-dir", str(built_library.settings.data_dir)]
    built_library.close()
    assert main([*data, "table", "--papers", PDF_PAPER, "--column", "Datasets", "--column", "Code", "--format", "json"]) == 0
    out = capsys.readouterr()
    got = json.loads(out.out)
    assert [c["name"] for c in got["columns"]] == ["Datasets", "Code"] and got["rows"][0]["paper_id"] == PDF_PAPER
    assert "1 papers x 2 columns" in out.err
    assert main([*data, "table", "--papers", PDF_PAPER, "--column", "Datasets", "--format", "csv"]) == 0
    assert "(0 cells computed, 1 from the cache)" in capsys.readouterr().err
    assert main([*data, "table", "--papers", ""]) == 2
    assert "--papers was given an empty value" in capsys.readouterr().err
    assert main([*data, "table", "--papers", "9999.99999", "--column", "Code"]) != 0
    assert "not in the library: 9999.99999" in capsys.readouterr().err
    many = ",".join(f"2501.{i:05d}" for i in range(MAX_PAPERS + 1))
    assert main([*data, "table", "--papers", many, "--column", "Code"]) != 0
    assert f"at most {MAX_PAPERS} papers" in capsys.readouterr().err
    assert main([*data, "table", "--topic", "no-such-topic"]) != 0
    assert "no topic or collection" in capsys.readouterr().err


def test_the_cell_picker_learns_what_a_columns_answers_say() -> None:
    """Trained on cells whose answer sentence names a benchmark among generic ones (features otherwise noise),
    the picker with the columns' words finds it on papers it never saw, and says "not stated" when no sentence
    does; without the words it cannot."""
    import numpy as np

    from paperchat.tables.train import _Cell, cross_validate, fit

    rng = np.random.default_rng(7)
    filler = ["We propose a new method for this problem.", "Our approach is simple and general.", "Results show clear improvements.",
              "We discuss limitations and future work.", "The model is trained end to end."]
    col = PRESETS["empirical"][2]  # Datasets
    cells = []
    for i in range(60):
        stated = i % 4 != 0
        texts = list(filler)
        if stated:
            texts.insert(int(rng.integers(0, 5)), f"We evaluate on the {['SQuAD', 'GLUE', 'MMLU', 'GSM8K'][i % 4]} benchmark and two more datasets.")
        labels = np.asarray(["evaluate on" in t for t in texts])
        vecs = rng.normal(size=(len(texts), 8)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        gold = {"paper_id": f"p{i}", "column": col.name, "not_stated": not stated}
        cells.append(_Cell(gold, col, texts, rng.normal(size=(len(texts), len(FEATURES))).astype(np.float32), vecs, labels))
    with_words, without = cross_validate(cells, 1.0, True), cross_validate(cells, 1.0, False)
    assert with_words["holds_gold"] >= 0.9 and with_words["not_stated_recall"] >= 0.8, with_words
    assert without["holds_gold"] <= 0.6, without
    model = fit(cells, 1.0, True)
    assert model.words and model.score(np.zeros((2, len(FEATURES)), np.float32), col, ["We evaluate on the XNLI benchmark.", filler[0]]).argmax() == 0


def test_the_cell_pickers_training_cells_are_apart_from_the_gold() -> None:
    """eval/table_train*.jsonl, written by reading: no paper of the held-out gold, one line per (paper, preset
    column), and a not-stated cell carries no answer, page or evidence."""
    from paperchat.settings import PROJECT_ROOT

    rows = [json.loads(line) for line in (PROJECT_ROOT / "eval" / "table_gold.jsonl").open()]
    gold = {r["paper_id"] for r in rows}
    names = {c.name for c in PRESETS["empirical"]}
    seen: set[tuple[str, str]] = set()
    for path in sorted((PROJECT_ROOT / "eval").glob("table_train*.jsonl")):
        for line in path.open():
            r = json.loads(line)
            assert r["paper_id"] not in gold, (path.name, r["id"])
            assert r["column"] in names and (r["paper_id"], r["column"]) not in seen, (path.name, r["id"])
            seen.add((r["paper_id"], r["column"]))
            if r["not_stated"]:
                assert not (r["gold_answer"] or r["evidence"] or r["gold_pages"]), r["id"]
            else:
                assert r["evidence"] and (r["source"] == "abstract" or r["gold_pages"]), r["id"]
    assert len({p for p, _ in seen}) >= 190


def test_the_cell_picker_reads_a_columns_direction_in_the_vectors() -> None:
    """The vector features: the cosine to the column's prototype, its margin over the other columns' prototypes,
    and the column's probe (zeros for a column the model was not trained for); trained on cells whose answer
    differs from the rest only in its vector, the picker finds it on papers it never saw."""
    import numpy as np

    from paperchat.tables.train import _Cell, cross_validate

    e = np.eye(8, dtype=np.float32)
    model = CellModel({"Task": e[0], "Approach": e[1]}, np.zeros(len(FEATURES)), np.ones(len(FEATURES)), np.zeros(len(FEATURES)), 0.0, 0.0,
                      probes={"Task": (5 * e[0], -1.0)})
    vecs = np.stack([e[0], e[1], (e[0] + e[1]) / np.sqrt(2)])
    cos_p, margin, probe = model.vector_features("Task", vecs)
    assert np.allclose(cos_p, [1, 0, 0.7071], atol=1e-3) and np.allclose(margin, [1, -1, 0], atol=1e-3)
    assert np.allclose(probe, [4, -1, 5 * 0.7071 - 1], atol=1e-3)
    assert not model.vector_features("Code", vecs)[0].any() and not model.vector_features("Approach", vecs)[2].any()

    rng = np.random.default_rng(3)
    col = PRESETS["empirical"][0]  # Task
    direction = rng.normal(size=16).astype(np.float32)

    def cells(signal: bool) -> list[_Cell]:
        out = []
        for i in range(60):
            vecs = rng.normal(size=(6, 16)).astype(np.float32)
            labels = np.zeros(6, dtype=bool)
            if i % 4:
                j = int(rng.integers(0, 6))
                labels[j] = True
                if signal:
                    vecs[j] += 6.0 * direction / np.linalg.norm(direction)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            gold = {"paper_id": f"p{i}", "column": col.name, "not_stated": not i % 4}
            out.append(_Cell(gold, col, ["The same sentence."] * 6, rng.normal(size=(6, len(FEATURES))).astype(np.float32), vecs, labels))
        return out

    found, blind = cross_validate(cells(True), 1.0, False), cross_validate(cells(False), 1.0, False)
    assert found["holds_gold"] >= 0.9, found
    assert blind["holds_gold"] <= 0.5, blind


def test_the_shipped_cell_picker_has_a_probe_per_preset_column_and_the_trainers_floor() -> None:
    """models/table-cells was trained by the trainer as it stands: a probe and a prototype for every empirical
    column, and the not-stated threshold chosen with the trainer's precision floor, which held on the held-out folds."""
    from paperchat.tables.cells import MODEL_DIR
    from paperchat.tables.train import NS_PRECISION

    model = CellModel.load()
    assert model is not None
    names = {c.name for c in PRESETS["empirical"]}
    assert set(model.probes) == names and set(model.prototypes) == names
    assert all(w.shape == (384,) for w, _ in model.probes.values())
    meta = json.loads((MODEL_DIR / "training.json").read_text())
    assert meta["ns_precision"] == NS_PRECISION
    assert meta["cross_validation"][meta["chosen"]]["not_stated_precision"] >= NS_PRECISION


def test_the_picker_is_fitted_on_the_evidence_sentences_where_a_candidate_is_one() -> None:
    """A short gold value is in sentences that do not answer the column: the picker is fitted on the evidence
    sentence alone when a candidate is one, on every sentence holding the value when none is."""
    import numpy as np

    from paperchat.tables.train import _Cell

    texts = ["We introduce ToolLLM, a framework for tool use.", "Open-source LLMs remain limited in tool use with real-world APIs.",
             "We train on 16 GPUs."]
    gold = {"paper_id": "p", "column": "Task", "not_stated": False, "gold_answer": "tool use", "answer_aliases": [],
            "evidence": ["Open-source LLMs remain significantly limited in tool use, i.e., using real-world APIs."]}
    labels = np.asarray([answers(t, None, gold) for t in texts])
    cell = _Cell(gold, PRESETS["empirical"][0], texts, np.zeros((3, len(FEATURES)), np.float32), np.zeros((3, 4), np.float32), labels)
    assert labels.tolist() == [True, True, False] and cell.fit_labels.tolist() == [False, True, False]
    other = _Cell({**gold, "evidence": ["A sentence no candidate is."]}, cell.column, texts, cell.dense, cell.vecs, labels)
    assert other.fit_labels.tolist() == [True, True, False]
