"""The guided lessons' text: each lesson's goal, steps, the question to predict, what to notice and where to go next.

Each lesson follows the same rhythm: read the goal, **predict** the answer to a question, work through two or
three steps that show the real thing (drawn by ``ui.lessons.views``), **reveal** whether the prediction was
right and why, then read what to notice. ``ui.lessons.frame`` draws that rhythm around the text held here.

Every text a person reads is English, marked with ``N_`` where it is written here and translated where it is shown
(``_(lesson.title)``): a lesson's title, goal, steps and notice, its question's prompt, options and explanation, and
its links' labels. Keys, icons, page names and query parameters are not translated.
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.i18n import N_


@dataclass(frozen=True)
class Question:
    """A predict-then-reveal question."""

    prompt: str  # the question, asked before the steps
    options: tuple[str, ...]  # possible answers
    answer: int  # index of the right answer in options
    explanation: str  # why it is right, shown on reveal


@dataclass(frozen=True)
class Link:
    """A link to another page, opened with prepared settings."""

    page: str  # the page's name in the page registry (ui/pages.py), e.g. "attention"
    label: str  # link text
    query: tuple[tuple[str, str], ...] = ()  # query parameters the page reads (see its UrlParams)


@dataclass(frozen=True)
class Lesson:
    """One guided scenario."""

    key: str  # short id, used in the URL
    title: str  # heading
    icon: str  # emoji shown with the title
    goal: str  # what the student will understand afterwards
    steps: tuple[str, ...]  # instructions, one per step (Markdown)
    question: Question  # predicted before the steps, revealed after them
    notice: tuple[str, ...]  # "what to notice" bullet points
    links: tuple[Link, ...] = ()  # where to explore further


POSITIONAL = Lesson(
    key="positional",
    title=N_("Why positional encoding matters"),
    icon="〰️",
    goal=N_(
        "See that attention on its own ignores word order, and that a model without positional encoding "
        "cannot learn to reverse a sequence."
    ),
    steps=(
        N_(
            "Attention compares every token with every other, but nothing in that comparison says *where* a token "
            "stands. Below, a randomly initialised encoder reads the digits **3 1 4 1 5 9 2 6** and then the same "
            "digits backwards. Without positional encoding its outputs are the very same vectors, only in the "
            "reverse order; with sinusoidal encoding they change."
        ),
        N_(
            "Now train the same small encoder–decoder twice to **reverse 8 digits**: once with sinusoidal "
            "positional encoding and once with none. Same data, same seed, same number of steps; only the "
            "positional encoding differs."
        ),
        N_(
            "Where does the decoder look in the input while it writes each output digit? These maps show the "
            "cross-attention of the last layer (averaged over heads) after training: each row is the digit the "
            "decoder writes (first at the top, then *end*), the columns are the input digits it reads."
        ),
    ),
    question=Question(
        prompt=N_(
            "Without positional encoding, how many 8-digit sequences will the model reverse exactly after "
            "a short training run?"
        ),
        options=(
            N_("About as many as with positional encoding (nearly all)"),
            N_("About half of them"),
            N_("Almost none"),
        ),
        answer=2,
        explanation=N_(
            "Without positions, the encoder's output for a digit is the same wherever the digit stands, "
            "so the decoder cannot tell which digit came last. It can learn which digits occur, but "
            "not in which order, and exact reversals stay near 0 %. With sinusoidal encoding every "
            "position has its own vector, and the cross-attention learns the anti-diagonal."
        ),
    ),
    notice=(
        N_(
            "Without positional encoding the loss falls a little (the model learns which digits occur) and then "
            "stalls well above the other run's."
        ),
        N_(
            "With positional encoding the cross-attention becomes an anti-diagonal: the first output digit reads "
            "the last input digit, the second reads the one before it, and so on."
        ),
        N_(
            "Self-attention is *permutation-equivariant*: shuffle the input and the outputs are shuffled the same "
            "way. Positional encodings are what break this symmetry."
        ),
    ),
    links=(
        Link("positional", N_("Compare sinusoidal, learned, rotary and no encoding")),
        Link(
            "training",
            N_("Train both models side by side in Live Training"),
            (("task", "reverse"), ("compare", "true"), ("positional", "sinusoidal"), ("b_positional", "none")),
        ),
    ),
)

HEADS = Lesson(
    key="heads",
    title=N_("Many heads, one pattern"),
    icon="🔦",
    goal=N_(
        "Find out whether the eight attention heads of a model that learns to reverse digits divide the work "
        "between them, and measure it with a pattern score."
    ),
    steps=(
        N_(
            "Train the reverse model: 2 layers of cross-attention with 4 heads each (it is the same run as in *Why "
            "positional encoding matters*, so if you trained there it is ready here)."
        ),
        N_(
            "Drag the slider through training. Each small map is one head's cross-attention: rows are the output "
            "digits the decoder writes, columns are the input digits it reads, brighter means more attention."
        ),
        N_(
            "The **pattern score** of a head is the share of its attention that lies on the anti-diagonal, the "
            "pattern that solves reversing (1 = all of it, about 1/8 = spread evenly). Follow every head's score "
            "through training."
        ),
    ),
    question=Question(
        prompt=N_("After training, what will the eight heads' cross-attention look like?"),
        options=(
            N_("Eight different patterns: each head takes its own part of the job"),
            N_("The same anti-diagonal in every head"),
            N_("One head finds the anti-diagonal; the others stay spread out"),
        ),
        answer=1,
        explanation=N_(
            "Reversing needs only one pattern: output digit 1 reads input digit 8, output 2 reads "
            "input 7, and so on. Every head receives the same push towards it during training, and "
            "nothing rewards doing something else, so all eight learn the same anti-diagonal. Heads "
            "can only divide the work when a task needs several different patterns at once."
        ),
    ),
    notice=(
        N_(
            "At step 0 every head is spread almost evenly (scores near 1/8): random weights give scores that "
            "hardly differ, so the softmax is nearly flat."
        ),
        N_(
            "All eight scores rise during the same steps as the accuracy: the pattern *is* how the model solves "
            "the task, and every head carries a copy of it."
        ),
        N_(
            "Heads that learn the same thing are *redundant*: a model can often lose many of its heads and still "
            "work, which is why large models can be pruned."
        ),
    ),
    links=(
        Link(
            "training", N_("Train the induction task in Live Training and compare its heads"), (("task", "induction"),)
        ),
    ),
)

IMPORTANCE = Lesson(
    key="importance",
    title=N_("Which head does the work?"),
    icon="🔌",
    goal=N_(
        "Find out whether the head with the clearest pattern is the head a trained model cannot do without, by "
        "switching heads off and measuring what the model can still do."
    ),
    steps=(
        N_(
            "Train the reverse model (the same run as in *Many heads, one pattern*). It has 24 heads: 2 layers × 4 "
            "heads in the encoder's self-attention, in the decoder's self-attention and in the cross-attention."
        ),
        N_(
            "Which head can the model not do without? Look at the cross-attention heatmaps and how anti-diagonal each "
            "head is, then click the head you bet on to switch it off: its output becomes zero before "
            "W_O, the weights stay as they are. See how many of 512 new sequences are still reversed exactly, then "
            "try other heads, and several at once."
        ),
        N_(
            "Now measure every head: each of the 24 is switched off alone and the accuracy measured again. Set the "
            "map of what each head costs beside the map of how anti-diagonal each cross-attention head is."
        ),
    ),
    question=Question(
        prompt=N_(
            "Switch off the cross-attention head with the clearest anti-diagonal, the pattern that solves "
            "reversing. What happens to the accuracy?"
        ),
        options=(
            N_("It falls to almost 0 %: that head does the reversing"),
            N_("It falls by about half"),
            N_("It hardly changes: a few points at most"),
        ),
        answer=2,
        explanation=N_(
            "Every cross-attention head carries a copy of the anti-diagonal (see *Many heads, one "
            "pattern*), so when one is off the others still point the decoder at the right digit. A "
            "head's pattern shows where it looks, not whether the model needs it: the heads this model "
            "leans on most sit in the first layer, in the cross-attention and in the decoder's "
            "self-attention, which no pattern score looks at."
        ),
    ),
    notice=(
        N_(
            "Pattern and importance answer different questions: a heatmap shows where a head looks; switching the "
            "head off shows whether the model needs it."
        ),
        N_(
            "Redundant heads hide each other: switch off all four cross-attention heads of layer 1 together and "
            "almost no sequence is reversed any more, far more than their four costs one at a time add up to."
        ),
        N_("This is how heads are pruned from large models: measure each head's cost, then remove the cheapest."),
    ),
    links=(
        Link("training", N_("Switch heads off in your own run: train, pause, click heads"), (("task", "reverse"),)),
    ),
)

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

LESSONS: tuple[Lesson, ...] = (POSITIONAL, HEADS, IMPORTANCE, PATCHES, CAUSAL, SCALING, NOT_EXPLANATION)
LESSON_KEYS = tuple(lesson.key for lesson in LESSONS)


def lesson_by_key(key: str) -> Lesson:
    """The lesson with this key (the first lesson for an unknown key)."""
    return next((lesson for lesson in LESSONS if lesson.key == key), LESSONS[0])
