"""A message made where no language is known: English as a string, the reader's language when a page shows it."""

from __future__ import annotations

import pickle

from explorer.i18n import using_language
from explorer.i18n.message import Message, Num, localized, message_of


def test_a_message_is_its_english_text_and_says_itself_in_the_readers_language():
    message = Message("a batch size of {batch}", {"batch": 1024})
    assert message == "a batch size of 1,024" and isinstance(message, str)
    with using_language("de"):
        assert message.text() == "eine Batchgröße von 1.024"
        assert localized(message) == "eine Batchgröße von 1.024"
        assert localized(ValueError(message)) == "eine Batchgröße von 1.024"  # an exception made with one


def test_a_message_crosses_a_process_as_a_message():
    message = Message("a batch size of {batch}", {"batch": Num(0.5, 1)})
    back = pickle.loads(pickle.dumps(message))
    assert isinstance(back, Message) and back == message
    with using_language("de"):
        assert back.text() == "eine Batchgröße von 0,5"


def test_plain_texts_are_looked_up_and_anything_else_shown_as_it_is():
    with using_language("de"):
        assert localized("a batch size of {batch}") == "eine Batchgröße von {batch}"
        assert localized("not in any catalogue") == "not in any catalogue"
        assert localized(RuntimeError("two", "args")) == "('two', 'args')"
        assert localized(None) == "" and localized(3) == "3"


def test_message_of_keeps_a_message_to_be_shown_later():
    message = Message("a batch size of {batch}", {"batch": 2})
    assert message_of(ValueError(message)) is message
    assert message_of(KeyError("k", "v")) == "('k', 'v')"
