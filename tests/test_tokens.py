import pytest

from pipeline.tokens import TokenizerError, count_tokens, get_encoding


def test_o200k_and_cl100k_match_tiktoken_reference_ids():
    # Reference ids published by tiktoken for "hello world".
    assert get_encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]


def test_round_trip_and_count():
    enc = get_encoding("o200k_base")
    text = "Marley's ghost — 日本語 🎄"
    assert enc.decode(enc.encode(text)) == text
    assert count_tokens(text) == len(enc.encode(text))


def test_special_token_text_is_counted_not_rejected():
    assert count_tokens("<|endoftext|>") > 1


def test_unknown_encoding_is_a_clear_error():
    with pytest.raises(TokenizerError, match="unsupported encoding"):
        get_encoding("p50k_base")
