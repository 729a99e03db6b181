"""The text of the three lessons that train a model to reverse digits, on the page, while the class watches.

*Why positional encoding matters* trains it with and without positions, *Many heads, one pattern* follows its heads'
cross-attention through training, and *Which head does the work?* switches its heads off; the later lessons reuse
the run of the earlier ones, and their texts say so. Their steps are drawn by ``ui.lessons.training`` and
``ui.lessons.head_importance``.
"""

from __future__ import annotations

from explorer.i18n import N_
from ui.lessons.lesson import Lesson, Link, Question

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
