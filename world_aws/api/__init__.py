"""The world-aws HTTP API: start, list, inspect and cancel runs, and resume hooks, over HTTP.

``handle_http(event, runtime)`` answers one API Gateway HTTP API (payload
format 2.0) event; the Lambda function behind the deployed API calls it, and
``world-aws dev`` serves it on 127.0.0.1 through :mod:`world_aws.api.server`.
Framework-free: the request and response schemas are pydantic models
(:mod:`world_aws.api.models`), routing is a table (:mod:`world_aws.api.routes`).

==========================================  ======================================
route                                       answer
==========================================  ======================================
``POST /runs``                              201 ``{run_id, status}``
``GET /runs?status=&workflow=&attribute=``  200 ``{runs, cursor}`` (and created_after/before)
``GET /runs/{run_id}``                      200 the run, its result or error
``GET /runs/{run_id}/events?after=``        200 ``{run_id, events, next_after}``
``GET /runs/{run_id}/events/{position}``    200 the event, its payloads decoded
``GET /runs/{run_id}/steps``                200 ``{run_id, steps, summary}`` (attempts, ``abandoned``)
``GET /runs/{run_id}/timeline``             200 ``{run_id, status, as_of, summary, spans}``
``GET /workflows``                          200 ``{workflows}``: name, parameters
``POST /runs/{run_id}/cancel``              200, or 409 if the run had ended
``POST /hooks/{token}/resume``              202 ``{token, resume_id}``
==========================================  ======================================

Errors: ``{"error": {"kind", "message"}}`` with 400 (bad input, naming the
field), 404 (unknown run, token or route), 405, 409, 410, 429/503 (retry
later, with ``Retry-After``) or 500 (logged; the response names only the
request id).
"""
