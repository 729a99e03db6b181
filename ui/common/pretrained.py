"""Pretrained models in the pages: one shared, read-only copy per model per server, and the model menu.

The loaded model is kept by ``st.cache_resource``: it is in eval mode with gradients off and no page changes it,
so every visitor may share it. Per-visitor choices (which model) live in the page's session keys.
"""

from __future__ import annotations

import streamlit as st

from explorer.i18n import N_, _, num
from explorer.pretrained.catalogue import (
    Catalogue,
    Curated,
    Offer,
    catalogue,
    download,
    hub_reachable,
    offline_advice,
    params_text,
    public_text,
    same_model,
)
from transformer_core.pretrained import Pretrained, load_pretrained, models_dir
from ui.common.urlstate import add_link_notice, settle_choice

CATALOGUE_TTL_S = 30  # the models folder is looked at again after this many seconds (new folders appear)
# how the menus name the families (DistilBERT and RoBERTa are BERT-style encoders, named as one kind)
FAMILY_NAMES = {"gpt2": "GPT-2", "llama": N_("Llama-family"), "qwen2": N_("Llama-family"),
                "bert": "BERT", "distilbert": "BERT", "roberta": "BERT", "vit": "ViT"}
HUB_CHECK_TTL_S = 300  # whether the Hub is reachable is asked again after this many seconds


@st.cache_resource(max_entries=3, show_spinner=False)  # the caller shows the spinner, in the session's language
def _shared_model(source: str, max_bytes: int) -> Pretrained:
    return load_pretrained(source, max_bytes=max_bytes)


@st.cache_data(ttl=CATALOGUE_TTL_S, show_spinner=False)
def _catalogue(folder: str) -> Catalogue:
    return catalogue(folder=folder)


def models_on_offer() -> Catalogue:
    """The catalogue of models (see :func:`explorer.pretrained.catalogue.catalogue`), refreshed every few seconds.

    It is cached per models folder, so moving it (``TE_MODELS_DIR``) is seen at once.
    """
    return _catalogue(str(models_dir().resolve()))


@st.cache_data(ttl=HUB_CHECK_TTL_S, show_spinner=False)  # the caller shows the spinner
def _hub_online() -> bool:
    return hub_reachable()


def probability_table(names: list[str], probabilities: list[float], *, label: str, help: str) -> None:
    """Candidates and their probabilities as a table with bars, most likely first."""
    st.dataframe({"token": names, "probability": probabilities}, hide_index=True, width="stretch", column_config={
        "token": st.column_config.TextColumn(label, help=help),
        "probability": st.column_config.ProgressColumn(_("Probability"), format="percent", min_value=0.0,
                                                       max_value=1.0)})


def cache_key(pre: Pretrained) -> str:
    """What tells loaded models apart in the pages' ``st.cache_data`` results: two folders may share a name (``gpt2``
    in the models folder and in the Hugging Face cache), but each loaded model is its own shared object."""
    return f"{pre.name}#{id(pre.model)}"


def load_shared(offer: Offer, budget_bytes: int) -> Pretrained | None:
    """The offered model, loaded once per server; a friendly error (and ``None``) when its folder is bad."""
    try:
        with st.spinner(_("Loading the model's weights…")):
            return _shared_model(offer.source, budget_bytes)
    except ValueError as exc:
        st.error(_("**{model}** could not be loaded: {reason}").format(model=offer.info.name,
                                                                       reason=public_text(str(exc), offer)))
        return None


def pick_model(key: str, families: tuple[str, ...], *, label: str | None = None) -> Offer | None:
    """A menu of the allowed models of ``families``; the others and how to get more in an expander below.

    The menu's value (``st.session_state[key]``) is the model's name, so it can travel in a share link; another
    Hub name of the same model (``openai-community/gpt2`` for ``gpt2``) picks it, and a name not on this server
    becomes the first model, with a notice when a link brought it.

    Returns the chosen offer, or ``None`` when there is none (the expander then says how to get one).
    """
    cat = models_on_offer()
    # In the order of ``families`` (GPT-2 before BERT on a first visit), then by name.
    offers = sorted((o for o in cat.offers if o.allowed and o.info.family in families),
                    key=lambda o: (families.index(o.info.family), o.info.name.lower()))
    names = list(dict.fromkeys(_(FAMILY_NAMES.get(f, f)) for f in families))
    kinds = _("{some} or {last}").format(some=", ".join(names[:-1]), last=names[-1]) if len(names) > 1 else names[0]
    chosen = None
    if offers:
        by_name: dict[str, Offer] = {}
        for offer in offers:  # allowed ones come first: a name in both places is the models folder's
            by_name.setdefault(offer.info.name, offer)
        _follow_alias(key, list(by_name))
        settle_choice(key, list(by_name), why=_("no {kinds} model of that name is on this server; *More models* "
                                                "below says how to get one").format(kinds=kinds))
        name = st.selectbox(label or _("Pretrained model"), list(by_name), key=key,
                            format_func=lambda n: _label(by_name, n),
                            help=_("A published model from the models folder or the Hugging Face cache; its real "
                                   "weights and tokenizer run on this app's own transformer code."))
        chosen = by_name.get(name)
    else:
        add_link_notice(key, _("was ignored: no {kinds} model is on this server yet.").format(kinds=kinds))
        st.caption(_("No {kinds} model is on this machine yet; *More models* below says how to get one.")
                   .format(kinds=kinds))
    with st.expander(_("More models"), expanded=not offers):
        _more_models(cat, families, key)
    return chosen


def _follow_alias(key: str, names: list[str]) -> None:
    """Point the menu at the offered name of its model when it holds another Hub name of that model."""
    wanted = st.session_state.get(key)
    if isinstance(wanted, str) and wanted not in names:
        match = next((n for n in names if same_model(n, wanted)), None)
        if match is not None:
            st.session_state[key] = match


def _label(by_name: dict[str, Offer], name: str) -> str:
    """The menu text of the model named ``name`` (any other text is shown as it is)."""
    return by_name[name].label if name in by_name else name


def _more_models(cat: Catalogue, families: tuple[str, ...], key: str) -> None:
    greyed = [o for o in cat.offers if not o.allowed and o.info.family in families]
    for offer in greyed:
        st.markdown(f":grey[{offer.label}, {offer.where}: {offer.reason}]")
    curated = [(c, ok, why) for c, ok, why in cat.downloadable if c.family in families]
    if curated:
        with st.spinner(_("Checking whether the Hugging Face Hub can be reached…")):
            online = _hub_online()
    else:
        online = False
    if curated and not online:
        st.markdown(offline_advice(curated[0][0].model_id))
    for model, ok, why in curated:
        _download_row(model, ok, why, key, online)
    for name, reason in cat.skipped:
        st.caption(_("Skipped folder **{name}**: {reason}").format(name=name, reason=public_text(reason)))


def _download_row(model: Curated, ok: bool, why: str, key: str, online: bool) -> None:
    text = _("**{model}**: {params} parameters, {size} MB download, {good_for}").format(
        model=model.model_id, params=params_text(model.n_params), size=num(model.download_bytes / 2**20, 0),
        good_for=_(model.good_for))
    st.markdown(text if ok else f":grey[{text}; {why}]")
    if ok and online and st.button(_("Download {model}").format(model=model.model_id),
                                   key=f"{key}_get_{model.model_id}",
                                   help=_("Fetches the model's config, safetensors weights and tokenizer into the "
                                          "models folder; it then appears in the menu above.")):
        bar = st.progress(0.0, text=_("Starting the download…"))

        def report(done: int, total: int, name: str) -> None:
            text = _("Downloading {name}…").format(name=name) if name else _("Done")
            bar.progress(min(1.0, done / total) if total else 0.0, text=text)
        try:
            download(model, progress=report)
        except ValueError as exc:
            st.error(str(exc))
            return
        _catalogue.clear()
        st.rerun()
