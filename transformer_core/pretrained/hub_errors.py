"""What went wrong when talking to the Hugging Face Hub, in words a user can act on.

``huggingface_hub`` raises many error types; :func:`explain` turns each into a :class:`HubError` whose message says
what happened — gated, not found, a file missing, rate-limited, a server error, offline — and what to do. Messages
name the model and the file, never a path on this machine.
"""

from __future__ import annotations

TOKEN_HINT = "set the HF_TOKEN environment variable to an access token of that account and start again"


class HubError(ValueError):
    """A model could not be fetched from the Hub; the message says why and what to do instead."""


def offline_message(model_id: str, why: str = "This machine may be offline") -> str:
    """What to do when the Hub cannot be reached: fetch the model elsewhere and copy its folder here."""
    name = model_id.split("/")[-1]
    return (f"Could not reach the Hugging Face Hub to fetch {model_id!r}, and it is not in the local cache. "
            f"{why}. On a machine with internet run `python -m transformer_core.pretrained download {model_id} "
            f"--to models/`, then copy the folder models/{name} to the models folder of this machine.")


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    return code if isinstance(code, int) else None


def _is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` means no answer came back (no network, DNS, proxy or TLS failure, timeout)."""
    try:
        import httpx2
        transport: tuple[type[BaseException], ...] = (httpx2.TransportError,)
    except ImportError:  # an older huggingface_hub on requests: its errors are ConnectionError/TimeoutError
        transport = ()
    return isinstance(exc, (*transport, ConnectionError, TimeoutError))


def _http_message(model_id: str, status: int | None) -> str:
    if status == 429:
        return (f"The Hugging Face Hub is limiting requests from this machine (429 Too Many Requests), so "
                f"{model_id!r} was not fetched. Wait a few minutes and try again; signed-in requests get a higher "
                f"limit ({TOKEN_HINT}).")
    if status is not None and status >= 500:
        return (f"The Hugging Face Hub answered with a server error ({status}) while fetching {model_id!r}. This "
                f"is usually brief: try again in a few minutes.")
    if status in (401, 403):
        return (f"The Hugging Face Hub refused access to {model_id!r} ({status}). If the model is private or "
                f"gated, {TOKEN_HINT}.")
    return f"The Hugging Face Hub could not serve {model_id!r} (HTTP {status})."


def explain(model_id: str, exc: BaseException, filename: str | None = None) -> HubError:
    """The :class:`HubError` that says what ``exc`` (raised while fetching ``model_id``) means for the user.

    Args:
        model_id: the model being fetched, e.g. ``"gpt2"``.
        exc: what ``huggingface_hub`` (or the network underneath it) raised.
        filename: the file being fetched, if it was one file.
    """
    if isinstance(exc, HubError):
        return exc
    try:
        from huggingface_hub import constants, errors
    except ImportError:
        return HubError(f"Could not fetch {model_id!r}: {type(exc).__name__}.")
    if isinstance(exc, errors.GatedRepoError):
        return HubError(f"{model_id!r} is gated: its authors ask each user to accept its terms first. Accept them at "
                        f"{constants.ENDPOINT}/{model_id} while signed in, then {TOKEN_HINT}.")
    if isinstance(exc, errors.RepositoryNotFoundError):
        return HubError(f"The Hugging Face Hub has no public model called {model_id!r}. Check the spelling (for "
                        f"example gpt2 or google/vit-base-patch16-224); if it is private, {TOKEN_HINT}.")
    if isinstance(exc, errors.RevisionNotFoundError):
        return HubError(f"{model_id!r} changed on the Hugging Face Hub while it was being fetched (the version being "
                        f"fetched is gone). Try again.")
    if isinstance(exc, errors.RemoteEntryNotFoundError):
        what = f"the file {filename}" if filename else "a file it lists"
        return HubError(f"{model_id!r} on the Hugging Face Hub no longer has {what}; the repository may be "
                        f"changing. Try again later.")
    if isinstance(exc, errors.OfflineModeIsEnabled):
        return HubError(offline_message(model_id, "HF_HUB_OFFLINE is set on this server, so nothing is downloaded"))
    if isinstance(exc, errors.HfHubHTTPError):
        return HubError(_http_message(model_id, _status(exc)))
    if isinstance(exc, errors.LocalEntryNotFoundError) or _is_connection_error(exc):
        return HubError(offline_message(model_id))
    if isinstance(exc, OSError):  # the disk, not the network: say so without the path
        return HubError(f"{model_id!r} could not be saved on this machine ({exc.strerror or type(exc).__name__}).")
    return HubError(f"Could not fetch {model_id!r} from the Hugging Face Hub ({type(exc).__name__}).")
