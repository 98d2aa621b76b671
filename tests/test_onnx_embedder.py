"""The ONNX Runtime backend of MiniLM: the embedder contract, equivalence with the torch model on real
abstracts and dev questions, the export cache's checks, the store's guard, and the device fallback.

The model is exported once per session (about 10 s: torch loads the weights to export them); everything
that loads it is in the slow layer, except the device rules, which need no model.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from paperchat.errors import EmbedderMismatch
from paperchat.ingestion.pipeline import Ingester
from paperchat.ingestion.records import read_records
from paperchat.library import Library
from paperchat.providers.devices import resolve_device
from paperchat.providers.embedders import store_name
from paperchat.providers.minilm import MiniLMEmbedder
from paperchat.providers.onnx_minilm import ExportedModel, OnnxMiniLMEmbedder
from paperchat.types import Embedder, Paper

from .conftest import SHARED, make_settings
from .test_contracts import OTHERS, RELEVANT, EmbedderContract

# measured on 300 real abstracts (docs/measured.md, "Faster embedding"): fp32 min cosine 0.9999998, int8 min 0.99
FP32_MIN_COS = 0.9999
INT8_MIN_COS = 0.98


@pytest.fixture(scope="session")
def onnx_int8(models_dir: Path) -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(models_dir, quantized=True)


@pytest.mark.slow
class TestOnnxMiniLMEmbedder(EmbedderContract):
    name = "minilm-onnx"

    @pytest.fixture
    def embedder(self, onnx_fp32: OnnxMiniLMEmbedder) -> Embedder:
        return onnx_fp32


@pytest.mark.slow
class TestOnnxInt8MiniLMEmbedder(EmbedderContract):
    name = "minilm-onnx-int8"

    @pytest.fixture
    def embedder(self, onnx_int8: OnnxMiniLMEmbedder) -> Embedder:
        return onnx_int8

    def test_deterministic_and_batch_independent(self, embedder: Embedder) -> None:
        """Dynamic quantization scales activations by the range of the whole batch, so a text's int8 vector
        depends slightly on what it was batched with: the same batch gives the same vectors, another
        batching gives vectors within cosine 0.98 (one reason int8 is a different embedder). How close depends on
        the CPU's int8 kernels: 0.99 or more on an AMX/VNNI Xeon, 0.989 on an AVX2-only AMD EPYC."""
        texts = [RELEVANT, *OTHERS]
        once = embedder.embed(texts)
        assert np.array_equal(once, embedder.embed(texts))
        for other in (embedder.embed(texts, batch_size=1), np.stack([embedder.embed_query(t) for t in texts])):
            assert float((once * other).sum(axis=1).min()) >= 0.98


# -- equivalence with the torch model ------------------------------------------------------------------


def _abstracts(sample_jsonl: Path) -> list[str]:
    return [f"{p.title}\n\n{p.abstract}" for p in read_records(sample_jsonl) if isinstance(p, Paper) and p.abstract]


def _questions(n: int = 12) -> list[str]:
    rows = [json.loads(line) for line in open(SHARED / "eval" / "topic_dev.jsonl", encoding="utf-8") if line.strip()]
    return [r["question"] for r in rows[:n]]


@pytest.mark.slow
def test_same_vectors_and_same_top10_as_torch(minilm: MiniLMEmbedder, onnx_fp32: OnnxMiniLMEmbedder, onnx_int8: OnnxMiniLMEmbedder, sample_jsonl: Path) -> None:
    """fp32 ONNX is the torch model (same vectors within 1e-4 cosine, the same ranked top 10); int8 is
    close (cosine >= 0.98) and ranks mostly the same papers, but it is not the same embedder."""
    texts = _abstracts(sample_jsonl)[:120]
    ref, fp32, int8 = minilm.embed(texts), onnx_fp32.embed(texts), onnx_int8.embed(texts)
    assert float((ref * fp32).sum(axis=1).min()) >= FP32_MIN_COS
    assert float((ref * int8).sum(axis=1).min()) >= INT8_MIN_COS
    overlaps = []
    for q in _questions():
        top = {
            name: list(np.argsort(-(docs @ emb.embed_query(q)))[:10])
            for name, docs, emb in (("torch", ref, minilm), ("fp32", fp32, onnx_fp32), ("int8", int8, onnx_int8))
        }
        assert top["fp32"] == top["torch"], q
        overlaps.append(len(set(top["int8"]) & set(top["torch"])))
    assert np.mean(overlaps) >= 8


# -- the export cache ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_damaged_export_is_refused_and_made_again(models_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "models"
    shutil.copytree(models_dir, folder)
    exported = ExportedModel(folder, quantized=True)
    path = exported.path()
    assert path.name.endswith("-int8.onnx") and path.parent == folder
    manifest = json.loads((folder / "minilm-onnx.json").read_text())
    assert manifest["source"]["sha256"][:16] in path.name and manifest["files"][path.name]
    with open(path, "r+b") as fh:  # flip bytes in the middle: same size, other content
        fh.seek(path.stat().st_size // 2)
        fh.write(b"\x00" * 64)
    assert not exported._valid(manifest, path.name)
    again = exported.path()  # quantized again from the (intact) fp32 export
    assert again == path and exported._valid(json.loads((folder / "minilm-onnx.json").read_text()), path.name)


# -- the store's guard ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_store_guard_fp32_shares_the_torch_store_int8_does_not(
    minilm: MiniLMEmbedder, onnx_fp32: OnnxMiniLMEmbedder, onnx_int8: OnnxMiniLMEmbedder, sample_jsonl: Path, tmp_path: Path
) -> None:
    data = tmp_path / "store"
    papers = [p for p in read_records(sample_jsonl) if isinstance(p, Paper)][:20]
    lib = Library(make_settings(data, embedder="minilm"), embedder=minilm)
    Ingester(lib).ingest_records(iter(papers))
    lib.close()
    assert store_name("minilm-onnx") == store_name("minilm") != store_name("minilm-onnx-int8")
    same = Library(make_settings(data, embedder="minilm-onnx"), embedder=onnx_fp32)  # the same vectors: accepted
    assert Ingester(same).ingest_records(iter(papers)).chunks_added == 0
    same.close()
    with pytest.raises(EmbedderMismatch) as exc:
        Library(make_settings(data, embedder="minilm-onnx-int8"), embedder=onnx_int8)
    assert "PAPERCHAT_EMBEDDER=minilm" in str(exc.value) and "paperchat doctor --repair" in exc.value.hint


# -- the device setting --------------------------------------------------------------------------------


def test_device_rules() -> None:
    assert resolve_device("cpu", lambda: True) == ("cpu", None)
    assert resolve_device("auto", lambda: True) == ("cuda", None)
    assert resolve_device("auto", lambda: False) == ("cpu", None)
    device, note = resolve_device("cuda", lambda: False)
    assert device == "cpu" and note and "running on CPU" in note


@pytest.mark.slow
def test_cuda_asked_without_a_gpu_falls_back_to_cpu_with_a_line(
    models_dir: Path, tmp_path: Path, sample_jsonl: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No GPU on this machine: PAPERCHAT_DEVICE=cuda embeds on the CPU and the ingest summary says so."""
    from paperchat.cli.common import print_report

    data = tmp_path / "store"
    shutil.copytree(models_dir, data / "models")  # the checked export: nothing to export again
    emb = OnnxMiniLMEmbedder(data / "models", device="cuda")
    lib = Library(make_settings(data, embedder="minilm-onnx", device="cuda"), embedder=emb)
    papers = [p for p in read_records(sample_jsonl) if isinstance(p, Paper)][:5]
    report = Ingester(lib).ingest_records(iter(papers))
    lib.close()
    assert report.device == "cpu" and report.device_note and "PAPERCHAT_DEVICE=cuda" in report.device_note
    assert report.to_json()["device"] == "cpu"
    print_report(report, as_json=False)
    out = capsys.readouterr()
    assert "embedded on cpu" in out.out and "running on CPU" in out.err


# -- the ingest benchmark with the new backend ---------------------------------------------------------


@pytest.mark.slow
def test_bench_ingest_reports_both_backends(models_dir: Path, sample_jsonl: Path, tmp_path: Path) -> None:
    """`paperchat bench ingest` with minilm-onnx: ours/limit against the ONNX backend itself, and torch
    MiniLM on the same texts in the same run (numbers not asserted: they live in the benchmark)."""
    from paperchat import bench

    settings = make_settings(tmp_path / "unused", embedder="minilm-onnx", models_dir=models_dir)
    res = bench.bench_ingest(sample_jsonl, 10, settings)
    assert res["embedder"] == "minilm-onnx" and res["device"] == "cpu" and res["first_added"] == 10
    assert res["torch_minilm_s"] > 0 and res["ours_speedup_vs_torch"] > 0 and res["ours/limit"] > 0
    assert not (tmp_path / "unused").exists()  # the export was reused, not made again in a temp store


@pytest.mark.slow
def test_a_query_process_never_imports_torch(models_dir: Path) -> None:
    """The cold-start saving: once exported, embedding loads onnxruntime and tokenizers only."""
    import subprocess
    import sys

    from .conftest import ROOT

    code = (
        "import sys\nfrom pathlib import Path\nfrom paperchat.providers.onnx_minilm import OnnxMiniLMEmbedder\n"
        f"OnnxMiniLMEmbedder(Path({str(models_dir)!r})).embed_query('a question?')\n"
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
