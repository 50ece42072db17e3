"""``GET /runs`` filtered by attribute and creation time; ``GET /runs/{id}`` with the run's input."""

from __future__ import annotations

from datetime import timedelta

from .conftest import Api


def _listed(api: Api, **query: str) -> list[str]:
    answer = api.call("GET", "/runs", query=query)
    assert answer.status == 200, answer.body
    return [run["run_id"] for run in answer.body["runs"]]


def test_runs_filtered_by_an_attribute(api: Api) -> None:
    # GIVEN two runs with different values of one attribute
    mine = api.runtime.start("greet", "ada", attributes={"customer": "c-7"}).run_id
    other = api.runtime.start("greet", "bob", attributes={"customer": "c-8"}).run_id
    # WHEN the list is asked for one value
    # THEN only that run comes back, its attributes shown
    assert _listed(api, attribute="customer=c-7") == [mine]
    assert other in _listed(api)
    (summary,) = api.call("GET", "/runs", query={"attribute": "customer=c-7"}).body["runs"]
    assert summary["attributes"] == {"customer": "c-7"}


def test_runs_filtered_by_creation_window(api: Api) -> None:
    # GIVEN a run created now, and one created an hour later
    early = api.runtime.start("greet", "ada").run_id
    api.clock.advance(3600)
    late = api.runtime.start("greet", "bob").run_id
    middle = (api.clock.now() - timedelta(minutes=30)).isoformat()
    # THEN each side of the middle lists its own run
    assert _listed(api, created_after=middle) == [late]
    assert _listed(api, created_before=middle) == [early]


def test_a_malformed_filter_is_refused_naming_it(api: Api) -> None:
    answer = api.call("GET", "/runs", query={"attribute": "no-equals-sign"})
    assert answer.status == 400 and "attribute" in answer.message
    answer = api.call("GET", "/runs", query={"created_after": "yesterday"})
    assert answer.status == 400 and "created_after" in answer.message


def test_the_run_shows_its_input(api: Api) -> None:
    run_id = api.start("greet", "ada", punctuation="?")
    detail = api.call("GET", f"/runs/{run_id}").body
    assert detail["input"] == {"args": ["ada", "?"], "kwargs": {}}  # as the API bound them
