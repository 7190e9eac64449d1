"""The prompt of `pipeline eval`'s judge (`pipeline.eval.judge`)."""

from pipeline.prompts.base import Prompt

__all__ = ["EVAL_JUDGE"]

# GraphRAG-Bench's grading: the answer against the reference, three grades, a short reason.
EVAL_JUDGE = Prompt(
    name="eval_judge",
    revision=1,
    system=(
        "You grade an answer to a question against a reference answer. Judge only whether the answer "
        "states what the reference states; ignore style, length and citations like [Data: ...].\n"
        "- correct: it states the reference's key facts and nothing that contradicts them;\n"
        "- partially: it states some of the reference's key facts, or them with an error;\n"
        "- incorrect: it misses the reference's key facts, contradicts them, or declines to answer."
    ),
    user=(
        "Question: {question}\n\nReference answer: {reference}\n\nAnswer to grade: {answer}\n\n"
        'Answer as JSON: {{"verdict": "<correct|partially|incorrect>", "reason": "<one sentence>"}}'
    ),
)
