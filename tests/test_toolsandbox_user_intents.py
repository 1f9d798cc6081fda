"""The LLM path's user: which question an agent's free text asks.

The phrasings below were written before the matcher was changed, as an agent might ask
them; each names the slot a person would hear in it. (They are not independent of this
project's authors, only of the matcher's keyword lists.)"""

from __future__ import annotations

import pytest

from agentstudies.agents.toolsandbox import dialogue_act

PHRASINGS = {
    "last_name": [
        "Which Ana do you mean, Ana Silva or Ana Tanaka?",
        "I see two contacts called Quinn. Who exactly should get it?",
        "There are several people named Mei in your contacts - which one?",
        "Do you mean Bruno Okafor or Bruno Novak?",
        "Could you tell me the surname of the Greta you mean?",
        "Is that Hiro Castro or Hiro Duval?",
        "Which of your contacts named Luis should I use?",
        "I found more than one Esi. What's her last name?",
    ],
    "phone_number": [
        "What is their phone number?",
        "I couldn't find Zoltan in your contacts. What number should I text?",
        "Could you give me Ottilie's digits?",
        "Do you have a number I can reach Bertram at?",
        "What's the mobile number for Xiomara?",
        "Which number should I send it to?",
        "I have no contact by that name; can you share their number?",
        "How can I reach them - what's the phone?",
    ],
    "content": [
        "What should the message say?",
        "What would you like me to write to her?",
        "What do you want the text to read?",
        "Sure - what should I tell him?",
        "What's the message?",
        "Okay, and what do you want to say to Kavya?",
        "What text should I send?",
        "What wording would you like for the message?",
    ],
    "when": [
        "When should I remind you?",
        "What time should the reminder go off?",
        "For which day and time should I set it?",
        "When do you want to be reminded?",
        "At what time?",
        "What date should the reminder be for?",
        "Should I remind you at a particular hour? Which one?",
        "When would you like the alert?",
    ],
}


@pytest.mark.parametrize("slot,text", [(s, t) for s, ts in PHRASINGS.items() for t in ts])
def test_question_names_its_slot(slot, text):
    assert dialogue_act(text) == {"act": "ask", "slot": slot}


def test_statements_close_the_request():
    assert dialogue_act("Done, your reminder is set for 5 pm tomorrow.") == {"act": "done"}
    for t in ("I'm afraid I can't do that without a number.", "I am unable to find that city.",
              "Unfortunately there is no stock called Quorbex."):
        assert dialogue_act(t) == {"act": "cannot"}, t


def test_user_says_which_question_it_did_not_understand():
    import numpy as np

    from agentstudies.envs.toolsandbox import Message, Role, ScriptedUser, generate_scenarios

    sc = next(s for s in generate_scenarios(0) if s.template == "send_contact")
    user = ScriptedUser(sc.intents, np.random.default_rng(0))
    history = [user.opening(0), Message(Role.AGENT, Role.USER, "Shall we dance?", (Role.AGENT, Role.USER),
                                        act={"act": "ask", "slot": None})]
    reply = user.respond(history)
    assert "Shall we dance?" in reply.content and "understand" in reply.content
