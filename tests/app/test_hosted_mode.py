"""Hosted mode (ANATOMY_HOSTED=1): one shared link, many students, nothing a teaching demo should not allow.

The settings are read from the environment; the sidebar then offers only allowlisted models, refuses text
over the cap before any page runs (keeping it in its box), and the loader refuses over-long text from any
page's own field and reads at most the capped number of tokens.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from anatomy.checkpoints.pretrained import DEFAULT_MODEL_NAME
from harness.apptest import assert_clean, open_page
from harness.hostile import OutboundConnections
from lessons.common import hosting
from lessons.common.hosting import HostingSettings, HostingSettingsError
from lessons.common.ui import loaders

ROOT = Path(__file__).resolve().parents[2]
HOSTING_VARIABLES = (
    hosting.HOSTED_VARIABLE,
    hosting.ALLOWLIST_VARIABLE,
    hosting.MAX_CHARACTERS_VARIABLE,
    hosting.MAX_TOKENS_VARIABLE,
    hosting.TRAINING_BUDGET_VARIABLE,
    hosting.FINGERPRINT_VARIABLE,
    hosting.LANGUAGE_MODEL_VARIABLE,
)


@pytest.fixture
def environment(monkeypatch):
    """A clean slate of hosting variables; tests set the ones they need."""
    for name in HOSTING_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def hosted(environment):
    environment.setenv(hosting.HOSTED_VARIABLE, "1")
    return environment


@pytest.fixture(scope="module")
def tiny_bert_folder(tmp_path_factory):
    """A loadable BERT checkpoint with no tokenizer files: enough for the sidebar to load and name it."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("servers-own-models") / "tiny-bert"
    config = BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    BertModel(config).save_pretrained(folder)
    return str(folder)


# ---------------------------------------------------------------------------------------------------------
# The settings


def test_outside_hosted_mode_nothing_is_capped_and_only_the_embedded_model_is_listed():
    settings = HostingSettings.from_environment({})
    assert settings == HostingSettings(False, ("",), None, None, None)
    assert settings.allows_model("/any/folder") and settings.allows_model("bert-base-uncased")
    assert settings.text_problem("x" * 1_000_000) is None
    assert settings.token_limit(512) == 512


def test_hosted_mode_caps_5000_characters_512_tokens_and_30_seconds_of_training():
    settings = HostingSettings.from_environment({"ANATOMY_HOSTED": "1"})
    assert (settings.hosted, settings.max_input_characters, settings.max_input_tokens) == (True, 5_000, 512)
    assert settings.training_budget_seconds == 30.0
    assert settings.model_allowlist == ("",)
    assert not settings.allows_model("bert-base-uncased") and not settings.allows_model("/tmp")
    assert settings.allows_model("") and settings.allows_model(DEFAULT_MODEL_NAME)


def test_a_hosted_server_serves_smollm2_only_when_told_to_and_a_laptop_always_does():
    assert HostingSettings.from_environment({}).language_model
    assert not HostingSettings.from_environment({"ANATOMY_HOSTED": "1"}).language_model
    assert HostingSettings.from_environment({"ANATOMY_HOSTED": "1", "ANATOMY_LANGUAGE_MODEL": "1"}).language_model
    assert not HostingSettings.from_environment({"ANATOMY_LANGUAGE_MODEL": "off"}).language_model


def test_a_hosted_language_model_page_says_why_smollm2_is_off_and_loads_nothing(hosted, monkeypatch):
    def refuse(device):
        raise AssertionError("SmolLM2 must not be loaded on this server")

    monkeypatch.setattr(loaders, "_load_chat_model", refuse)
    app = open_page("lesson_pages/language_model.py")
    assert_clean(app)
    (notice,) = [info.value for info in app.info]
    assert "leaves SmolLM2 off" in notice and "ANATOMY_LANGUAGE_MODEL=1" in notice
    assert not app.dataframe and not app.get("plotly_chart")


def test_smollm2_is_offered_beside_the_allowlist_exactly_when_the_server_serves_it():
    on = HostingSettings.from_environment(
        {"ANATOMY_HOSTED": "1", "ANATOMY_LANGUAGE_MODEL": "1", "ANATOMY_MODEL_ALLOWLIST": "prajjwal1/bert-tiny"}
    )
    assert on.offered_models == ("", "prajjwal1/bert-tiny", hosting.LANGUAGE_MODEL)
    assert on.allows_model("smollm2-135m-instruct")  # any case: one spelling
    off = HostingSettings.from_environment({"ANATOMY_HOSTED": "1", "ANATOMY_MODEL_ALLOWLIST": hosting.LANGUAGE_MODEL})
    assert off.offered_models == ("",) and not off.allows_model(hosting.LANGUAGE_MODEL)


def test_a_hosted_sidebar_offers_smollm2_when_served_and_the_causal_lesson_runs_it(hosted):
    hosted.setenv(hosting.LANGUAGE_MODEL_VARIABLE, "1")
    app = open_page(
        "lesson_pages/causal.py", query={"model": hosting.LANGUAGE_MODEL, "cm_tab": "One head on your text"}
    )
    assert_clean(app)
    choice = app.sidebar.selectbox(key="model")
    assert choice.options == [DEFAULT_MODEL_NAME, hosting.LANGUAGE_MODEL] and choice.value == hosting.LANGUAGE_MODEL
    assert any("30 layers" in item.value for item in app.sidebar.caption) and app.get("plotly_chart")


def test_a_link_to_smollm2_on_a_server_that_leaves_it_off_loads_nothing(hosted, monkeypatch):
    def refuse(device):
        raise AssertionError("SmolLM2 must not be loaded on this server")

    monkeypatch.setattr(loaders, "_load_chat_model", refuse)
    app = open_page("lesson_pages/causal.py", query={"model": hosting.LANGUAGE_MODEL})
    assert_clean(app)
    assert "model" not in app.query_params and app.session_state["model"] == ""
    with pytest.raises(loaders.ModelLoadError, match="leaves SmolLM2 off"):
        loaders.get_model(hosting.LANGUAGE_MODEL)


@pytest.mark.parametrize("value", ["1", "true", "YES", " on "])
def test_hosted_mode_is_switched_on_by_any_usual_spelling_of_yes(value):
    assert HostingSettings.from_environment({"ANATOMY_HOSTED": value}).hosted


def test_the_allowlist_is_comma_separated_and_always_starts_with_the_embedded_model():
    settings = HostingSettings.from_environment(
        {
            "ANATOMY_HOSTED": "1",
            "ANATOMY_MODEL_ALLOWLIST": (
                " /srv/models/bert-tiny , prajjwal1/bert-tiny,, all-MiniLM-L6-v2 (embedded),/srv/models/bert-tiny"
            ),
        }
    )
    assert settings.model_allowlist == ("", "/srv/models/bert-tiny", "prajjwal1/bert-tiny")
    assert settings.allows_model(" prajjwal1/bert-tiny ") and not settings.allows_model("prajjwal1/bert-mini")


def test_each_cap_has_its_own_variable_which_also_works_outside_hosted_mode():
    settings = HostingSettings.from_environment(
        {
            "ANATOMY_MAX_INPUT_CHARS": "300",
            "ANATOMY_MAX_INPUT_TOKENS": "64",
            "ANATOMY_TRAINING_BUDGET_SECONDS": "12.5",
        }
    )
    assert not settings.hosted
    assert (settings.max_input_characters, settings.max_input_tokens, settings.training_budget_seconds) == (
        300,
        64,
        12.5,
    )
    assert settings.token_limit(512) == 64 and settings.token_limit(32) == 32


@pytest.mark.parametrize(
    "name, value",
    [
        ("ANATOMY_HOSTED", "maybe"),
        ("ANATOMY_LANGUAGE_MODEL", "perhaps"),
        ("ANATOMY_MAX_INPUT_CHARS", "lots"),
        ("ANATOMY_MAX_INPUT_CHARS", "-5"),
        ("ANATOMY_MAX_INPUT_TOKENS", "0"),
        ("ANATOMY_MAX_INPUT_TOKENS", "2.5"),
        ("ANATOMY_TRAINING_BUDGET_SECONDS", "inf"),
        ("ANATOMY_TRAINING_BUDGET_SECONDS", "nan"),
    ],
)
def test_an_unusable_setting_is_refused_with_its_name_and_value(name, value):
    with pytest.raises(HostingSettingsError, match=re.escape(name)):
        HostingSettings.from_environment({name: value})


def test_text_at_the_cap_passes_and_one_character_more_is_refused_with_both_lengths():
    settings = HostingSettings.from_environment({"ANATOMY_HOSTED": "1"})
    assert settings.text_problem("x" * 5_000) is None
    problem = settings.text_problem("x" * 5_001)
    assert "5,001 characters" in problem and "at most 5,000" in problem and "kept" in problem


def test_an_allowlisted_folder_is_shown_by_its_name_never_by_the_servers_full_path():
    assert hosting.model_label("/srv/private/models/bert-tiny") == "bert-tiny"
    assert hosting.model_label("prajjwal1/bert-tiny") == "prajjwal1/bert-tiny"
    assert hosting.model_label("") == DEFAULT_MODEL_NAME


# ---------------------------------------------------------------------------------------------------------
# The sidebar in hosted mode


def test_hosted_sidebar_offers_a_choice_among_allowed_models_and_no_free_text_field(hosted):
    app = open_page("lesson_pages/home.py")
    assert_clean(app)
    assert not app.sidebar.text_input, "a visitor must not be able to type a model reference"
    choice = app.sidebar.selectbox(key="model")
    assert choice.options == [DEFAULT_MODEL_NAME] and choice.disabled


@pytest.mark.parametrize("reference", ["/etc", "../../../../etc/passwd", "bert-base-uncased", "http://127.0.0.1:9/x"])
def test_a_link_to_a_model_off_the_allowlist_never_reaches_the_loader(hosted, monkeypatch, reference):
    requested = []
    real_load = loaders.load_pretrained
    monkeypatch.setattr(loaders, "load_pretrained", lambda name, **kw: requested.append(name) or real_load(name, **kw))
    with OutboundConnections() as outbound:
        app = open_page("lesson_pages/home.py", query={"model": reference})
    assert_clean(app)
    assert reference not in requested and not outbound.attempts
    assert "model" not in app.query_params, "the link's model is dropped from the address"
    assert app.session_state["model"] == ""
    assert any("6 layers" in item.value for item in app.markdown)  # the embedded model serves the page


def test_an_allowlisted_folder_is_offered_by_its_name_and_loads(hosted, tiny_bert_folder):
    hosted.setenv(hosting.ALLOWLIST_VARIABLE, tiny_bert_folder)
    app = open_page("lesson_pages/home.py", query={"model": tiny_bert_folder})
    assert_clean(app)
    choice = app.sidebar.selectbox(key="model")
    assert choice.options == [DEFAULT_MODEL_NAME, "tiny-bert"] and not choice.disabled
    assert choice.value == tiny_bert_folder
    assert not app.sidebar.error
    assert any("1 layers" in item.value for item in app.sidebar.caption)
    assert not any(tiny_bert_folder in item.value for item in app.sidebar.caption), "no server path on screen"


@pytest.mark.parametrize("page", ["lesson_pages/tokenization.py", "lesson_pages/attention.py"])
def test_text_over_the_cap_is_refused_before_the_page_runs_and_stays_in_its_box(hosted, page):
    hosted.setenv(hosting.MAX_CHARACTERS_VARIABLE, "40")
    text = "forty-one characters, one more than 40 ok"
    assert len(text) == 41
    app = open_page(page, text=text)
    assert_clean(app)
    assert not app.title, "the lesson does not run on refused text"
    main_errors = [item.value for item in app.main.error]
    assert len(main_errors) == 1 and "41 characters" in main_errors[0] and "at most 40" in main_errors[0]
    assert app.sidebar.error, "the sidebar says it too, next to the text"
    assert app.session_state["text"] == text, "what the student typed is kept"
    assert app.query_params["text"] == text, "and stays in the link"


def test_text_at_the_cap_runs_the_lesson(hosted):
    hosted.setenv(hosting.MAX_CHARACTERS_VARIABLE, "40")
    app = open_page("lesson_pages/tokenization.py", text="x" * 40)
    assert_clean(app)
    assert app.title and not app.error


def test_a_second_sentence_over_the_cap_is_refused_by_the_loader_with_a_message(hosted):
    hosted.setenv(hosting.MAX_CHARACTERS_VARIABLE, "40")
    app = open_page(
        "lesson_pages/tokenization.py", text="short", query={"tok_pair": "y" * 41, "tok_tab": "Tokens → vectors"}
    )
    assert_clean(app)
    assert any("The second sentence is 41 characters" in item.value for item in app.error)


def test_hosted_token_cap_limits_what_the_model_reads(hosted):
    hosted.setenv(hosting.MAX_TOKENS_VARIABLE, "8")
    app = open_page("lesson_pages/multihead.py", text="one two three four five six seven eight nine ten")
    assert_clean(app)
    assert any("makes 12 tokens" in item.value and "at most 8" in item.value for item in app.warning)


def test_outside_hosted_mode_the_model_field_stays_free_text_and_long_text_is_not_refused(environment):
    app = open_page("lesson_pages/multihead.py", text="word " * 2_000)  # 10,000 characters
    assert_clean(app)
    assert app.title and app.sidebar.text_input(key="model")
    assert any("the model reads at most 512" in item.value for item in app.warning)


def test_a_misconfigured_server_says_so_to_every_visitor_instead_of_crashing(environment):
    environment.setenv(hosting.HOSTED_VARIABLE, "maybe")
    app = open_page("lesson_pages/home.py")
    assert_clean(app)
    assert any("misconfigured" in item.value and "ANATOMY\\_HOSTED" in item.value for item in app.error)


# ---------------------------------------------------------------------------------------------------------
# The shared model is never changed by a session


def test_the_weight_fingerprint_is_shown_only_when_the_server_allows_it(environment):
    app = open_page("lesson_pages/home.py", query={"fingerprint": "1"})
    assert not any("sha256" in item.value for item in app.sidebar.caption)
    environment.setenv(hosting.FINGERPRINT_VARIABLE, "1")
    app = open_page("lesson_pages/home.py", query={"fingerprint": "1"})
    (shown,) = [item.value for item in app.sidebar.caption if "sha256" in item.value]
    assert shown.endswith(loaders.shared_model_fingerprint())


@pytest.mark.slow
def test_ablations_and_every_lesson_leave_the_shared_models_weights_bit_for_bit_unchanged(embedded):
    before = loaders.shared_model_fingerprint()
    for page, query in [
        ("lesson_pages/multihead.py", {"mh_tab": "Switch a head off", "mh_ablate": "0,1,2"}),
        ("lesson_pages/multihead.py", {"mh_tab": "Split and recombine"}),
        ("lesson_pages/encoder.py", {"enc_tab": "Pre-LN vs post-LN"}),
        ("lesson_pages/encoder.py", {"enc_tab": "Classification head"}),
        ("lesson_pages/causal.py", {"cm_tab": "No mask, padding, causal", "cm_pad": "3"}),
    ]:
        assert_clean(open_page(page, text="the heads are switched off here", query=query))
    assert loaders.shared_model_fingerprint() == before
    assert before == loaders.weights_fingerprint(embedded.model), "the served model is the checkpoint as on disk"


# ---------------------------------------------------------------------------------------------------------
# The deployment files say what the README says


def _requirement_pin(name: str) -> str:
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith(f"{name}=="):
            return line.split("==")[1].strip()
    raise AssertionError(f"{name} is not pinned in requirements.txt")


def test_the_dockerfile_runs_hosted_as_uid_1000_on_port_8501_with_the_pinned_cpu_torch():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"useradd .*--uid 1000", dockerfile) and "\nUSER user" in dockerfile
    assert "EXPOSE 8501" in dockerfile and "ANATOMY_HOSTED=1" in dockerfile
    assert "/_stcore/health" in dockerfile and "--server.port=8501" in dockerfile
    assert f"torch=={_requirement_pin('torch')}" in dockerfile
    assert "download.pytorch.org/whl/cpu" in dockerfile


def test_the_image_installs_none_of_the_test_tools():
    """What requirements.txt lists under "Tests and checks", and gguf and accelerate (only the GGUF reference
    tests use them), are filtered out of the image's requirements."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    filtered = re.search(r"grep -v -E '\^\(([^)]*)\)=='", dockerfile)
    assert filtered, "the Dockerfile filters requirements.txt"
    tests_and_checks = (ROOT / "requirements.txt").read_text().split("# Tests and checks", 1)[1].splitlines()
    test_tools = {line.split("==")[0].split("[")[0] for line in tests_and_checks if "==" in line}
    assert (test_tools | {"gguf", "accelerate"}) - set(filtered.group(1).split("|")) == set()


def test_the_image_leaves_out_tests_caches_and_the_virtual_environment():
    ignored = (ROOT / ".dockerignore").read_text().split()
    for entry in (".venv", ".git", "tests", "benchmarks", "**/__pycache__", ".pytest_cache"):
        assert entry in ignored, entry
