"""The text of the lessons that need no training run: they work on a picture, on random weights or on hand-set ones.

*Patches are tokens* cuts a picture into a ViT's tokens, *Causal masks* runs a random decoder layer, *Why divide by
√d_k* scores random vectors, and *Attention is not explanation* takes apart a hand-set model. Their steps are drawn
by ``ui.lessons.views`` and ``ui.lessons.not_explanation``.
"""

from __future__ import annotations

from explorer.i18n import N_
from ui.lessons.lesson import Lesson, Link, Question

PATCHES = Lesson(
    key="patches",
    title=N_("Patches are tokens"),
    icon="🧩",
    goal=N_(
        "See how a Vision Transformer turns a picture into a sequence of tokens — the same kind of sequence a "
        "text model reads."
    ),
    steps=(
        N_("Pick a picture and a patch size. The picture is cut into a grid of square patches."),
        N_(
            "Read the patches left to right, top to bottom: that is the token sequence. A learned **[CLS]** token "
            "goes in front; its output is what the ViT uses to classify the picture."
        ),
        N_(
            "Each patch is flattened into one long vector of pixel values and projected to `d_model` numbers, just "
            "like a word embedding. Attention then compares every token with every other one."
        ),
    ),
    question=Question(
        prompt=N_("A 32×32 colour picture is cut into 8×8 patches. How many tokens does the ViT read, counting [CLS]?"),
        options=("4", "16", "17", "64"),
        answer=2,
        explanation=N_(
            "(32 / 8)² = 16 patches, plus one [CLS] token = 17 tokens. Each patch token starts as "
            "8 · 8 · 3 = 192 numbers before the linear projection."
        ),
    ),
    notice=(
        N_("Halving the patch size gives four times as many tokens and about sixteen times as many attention scores."),
        N_(
            "Nothing in a patch vector says where the patch was; the ViT adds positional embeddings for that, just "
            "like the text models."
        ),
        N_("The model never sees single pixels: a patch is its smallest unit."),
    ),
    links=(Link("vit", N_("Follow a picture through a whole ViT")),),
)

CAUSAL = Lesson(
    key="causal",
    title=N_("Causal masks"),
    icon="🙈",
    goal=N_(
        "Find out what a decoder (GPT style) may look at when it predicts the next token, and how the mask enforces it."
    ),
    steps=(
        N_(
            "Type a short sentence. The causal mask is a triangle: the row is the token that asks (the query), the "
            "column the token it may read (the key); 1 means allowed."
        ),
        N_("Pick one token and see which tokens it may read."),
        N_(
            "Run a real decoder layer (random weights) on the sentence. Every weight to the right of the diagonal is "
            "exactly 0, and each row still adds up to 1. Hover over a cell for its value."
        ),
    ),
    question=Question(
        prompt=N_("A decoder reads “the cat sat on the mat”. Which words can “sat” attend to?"),
        options=(
            N_("Only “sat”"),
            N_("“the”, “cat” and “sat”"),
            N_("All six words"),
            N_("“sat”, “on”, “the” and “mat”"),
        ),
        answer=1,
        explanation=N_(
            "A decoder predicts the next word, so it may only use what is already written: the word "
            "itself and the words before it. The mask sets the scores of later words to −∞ before the "
            "softmax, so they get exactly zero weight."
        ),
    ),
    notice=(
        N_("The first token can only attend to itself: its row is 1, 0, 0, …"),
        N_("An encoder (BERT style) has no causal mask: every token sees the whole sentence."),
        N_(
            "Thanks to the mask, one forward pass trains the prediction of every position of a sentence at once "
            "without letting any position peek at its answer."
        ),
    ),
    links=(Link("attention", N_("Step through masked attention in the Attention Lab"), (("attn.mask", "causal"),)),),
)

SCALING = Lesson(
    key="scaling",
    title=N_("Why divide by √d_k"),
    icon="➗",
    goal=N_("See why attention divides the scores q·k by √d_k before the softmax."),
    steps=(
        N_(
            "Choose the size d_k of the query and key vectors. One random query is scored against 8 random keys "
            "whose entries have mean 0 and variance 1."
        ),
        N_("Compare the softmax of the raw scores with the softmax of the scaled scores."),
    ),
    question=Question(
        prompt=N_("With d_k = 256 and no scaling, what does the softmax over 8 keys look like?"),
        options=(
            N_("Roughly even, about 1/8 each"),
            N_("Almost all the weight on one key"),
            N_("All weights are zero"),
        ),
        answer=1,
        explanation=N_(
            "The dot product of two random 256-dimensional vectors has a standard deviation of "
            "√256 = 16, so the scores differ by tens and the softmax becomes nearly one-hot. Its "
            "gradients are then almost zero and learning stalls. Dividing by √d_k brings the spread "
            "back to about 1 for any d_k."
        ),
    ),
    notice=(
        N_("The scaled weights look alike for d_k = 4 and d_k = 1024; the unscaled ones get sharper and sharper."),
        N_("Scaling never changes which key scores highest, only how peaked the softmax is."),
    ),
    links=(Link("attention", N_("See ÷√d_k inside a real attention step")),),
)

NOT_EXPLANATION = Lesson(
    key="not_explanation",
    title=N_("Attention is not explanation"),
    icon="🔍",
    goal=N_(
        "See that the word a model looks at most is not always the word its answer depends on, and meet the "
        "tools that ask the model itself: attribution and patching."
    ),
    steps=(
        N_(
            "Here is a small model that finishes sentences about keys and cabinets. Read the sentence and guess the "
            "next word before the model answers: *the key to the cabinets …*"
        ),
        N_(
            "The heatmap shows where each word looks. The last row matters most: that word predicts what comes next. "
            "Guess first: which word does it look at most?"
        ),
        N_(
            "Attention says where the model looks, not what it used. *Attribution* asks the model: nudge each word's "
            "vector a little, how much does the score of “is” move? Gradient × input does it in one pass; integrated "
            "gradients walks from no words at all to the real ones. Guess first: which word made the model say “is”?"
        ),
        N_(
            "The strongest test is an experiment: change one word and see whether the answer changes. "
            "Then *patch*: run "
            "the changed sentence but put one position's vector back from the original, and see how much of the "
            "original answer comes back. Guess first: which change flips the answer?"
        ),
    ),
    question=Question(
        prompt=N_("If attention puts most of its weight on one word, is that the word the answer depends on?"),
        options=(
            N_("Yes: the heatmap shows what the model used"),
            N_("Not necessarily: a word with little attention can decide the answer"),
            N_("Attention and the answer are unrelated"),
        ),
        answer=1,
        explanation=N_(
            "Attention weights say how much of each word's *value* is mixed in, not how much that value "
            "holds. This head puts about 70 % of its weight on the first “the”, whose value is empty, "
            "and about a quarter on “key”, whose value carries the number. Attribution and patching both "
            "point at “key”; changing the first word does not move the answer. Attention is still "
            "related to the answer (“key” gets far more weight than “cabinets”), just not its explanation."
        ),
    ),
    notice=(
        N_(
            "The brightest column is the first word: many real models do this too. Heads park their attention on the "
            "first token (an *attention sink*) when they have nothing to fetch."
        ),
        N_(
            "Attribution and patching agree here; on big models they often differ in detail, which is why researchers "
            "use several lenses."
        ),
        N_(
            "This model's weights were set by hand (one layer, one head, 9 words) so that the case is clear; the "
            "attention, the attribution and the patching are computed live on it with the same functions the "
            "Attention Lab uses on GPT-2."
        ),
    ),
    links=(
        Link(
            "attention",
            N_("Try the second lenses on a real model (Attention Lab, Beyond attention)"),
            (("attn.beyond", "follow"),),
        ),
    ),
)
