"""`SweGymResourcesServer`: a NeMo Gym resources server whose sessions are swe_gym episodes.

NeMo Gym's ``simple_agent`` seeds a session (``/seed_session`` with the row), posts each tool call the
model makes to ``/<tool>``, then asks ``/verify`` for the reward. Here the session (NeMo Gym's cookie
``session_id``) is the key of one episode in swe_gym's `EpisodeHost`, so the lifecycle, the failure rule
and the grading are the host's, as on every front end:

- ``/seed_session`` starts the row's task (``instance_id``); a sandbox that cannot start masks the episode.
- ``/bash``, ``/str_replace_editor``, ``/submit`` are the episode's actions; the answer is the observation
  text. An action after the episode ended says so (the model's reply, never an HTTP error).
- ``/verify`` returns swe_gym's reward; an episode the model left running is graded as at a step limit.
  A masked episode (or a session this server never seeded, e.g. after a restart) sets NeMo Gym's
  ``mask_sample`` and a ``failure_kind``: the reward 0 is not a measurement and must not be trained on.
- Verify, ``/close_session`` and the server's shutdown remove the episode's sandboxes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse
from nemo_gym.base_resources_server import (
    BaseResourcesServerConfig,
    BaseSeedSessionRequest,
    BaseSeedSessionResponse,
    BaseVerifyRequest,
    BaseVerifyResponse,
    ResourcesCloseSessionRequest,
    ResourcesCloseSessionResponse,
    SimpleResourcesServer,
)
from nemo_gym.failure_kinds import PROVIDER_UNAVAILABLE, SESSION_LOST
from nemo_gym.server_utils import SESSION_ID_KEY
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from swe_gym.envs.host import EpisodeHost
from swe_gym.envs.options import HostConfig
from swe_gym.errors import ConfigError
from swe_gym.shown_text import as_shown
from swe_gym.tools import BASH, EDITOR, SUBMIT_TOOL

ToolName = Literal["bash", "str_replace_editor", "submit"]


class SweGymResourcesServerConfig(BaseResourcesServerConfig):
    """NeMo Gym's server config plus ``env``: swe_gym's `HostConfig` options (tasks, provider, max_steps, ...)."""

    env: dict[str, Any] = Field(default_factory=dict, description="swe_gym HostConfig options")


class SweGymSeedSessionRequest(BaseSeedSessionRequest):
    model_config = ConfigDict(extra="allow")

    instance_id: str


class SweGymVerifyRequest(BaseVerifyRequest):
    model_config = ConfigDict(extra="allow")

    instance_id: str


class SweGymVerifyResponse(BaseVerifyResponse):
    model_config = ConfigDict(extra="allow")

    instance_id: str
    resolved: bool = False
    patch: str = ""


class BashRequest(BaseModel):
    command: str


class EditorRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # the editor checks its own arguments (view, create, ...)


class SubmitRequest(BaseModel):
    pass


class Outcome(BaseModel):
    """How an episode ended: its reward, and whether it is a measurement at all."""

    reward: float = 0.0
    resolved: bool = False
    masked: bool = False
    masked_reason: str | None = None
    patch: str = ""

    @classmethod
    def of(cls, reward: float, info: dict[str, Any]) -> Outcome:
        return cls(
            reward=reward,
            resolved=bool(info.get("resolved")),
            masked=bool(info.get("masked")),
            masked_reason=info.get("masked_reason"),
            patch=as_shown(info.get("patch") or ""),  # a patch that is not UTF-8 goes out marked, as JSON holds it
        )


class SweGymResourcesServer(SimpleResourcesServer):
    ray_enabled = False
    config: SweGymResourcesServerConfig

    _host: EpisodeHost | None = PrivateAttr(default=None)
    _outcomes: dict[str, Outcome] = PrivateAttr(default_factory=dict)

    @property
    def host(self) -> EpisodeHost:
        if self._host is None:
            options = {"tools": [BASH, EDITOR, SUBMIT_TOOL], **self.config.env}
            self._host = EpisodeHost(HostConfig.parse(options))
        return self._host

    def setup_webserver(self) -> FastAPI:
        app = super().setup_webserver()
        for name in (BASH, EDITOR, SUBMIT_TOOL):
            app.post(f"/{name}", response_class=PlainTextResponse)(getattr(self, name))
        inner = app.router.lifespan_context

        @asynccontextmanager
        async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
            self.host  # noqa: B018 - the tasks load (a bad env config fails) before the server reports ready
            try:
                async with inner(app) as state:
                    yield state
            finally:  # every episode's sandboxes go with the server
                self.host.close()

        app.router.lifespan_context = lifespan
        return app

    async def seed_session(self, request: Request, body: SweGymSeedSessionRequest) -> BaseSeedSessionResponse:
        key = request.session[SESSION_ID_KEY]
        host = self.host
        task = host.by_id.get(body.instance_id)
        if task is None:
            raise ConfigError(f"unknown instance_id {body.instance_id!r}; this server has {len(host.tasks)} tasks")
        self._outcomes.pop(key, None)
        await host.call_async(host.start(key, task))
        return BaseSeedSessionResponse()

    async def bash(self, request: Request, body: BashRequest) -> str:
        return await self._act(request, BASH, body.model_dump())

    async def str_replace_editor(self, request: Request, body: EditorRequest) -> str:
        return await self._act(request, EDITOR, body.model_dump())

    async def submit(self, request: Request, body: SubmitRequest) -> str:
        return await self._act(request, SUBMIT_TOOL, {})

    async def _act(self, request: Request, name: ToolName, arguments: dict[str, Any]) -> str:
        key = request.session[SESSION_ID_KEY]
        host = self.host
        if key in self._outcomes or not (host.live(key) or key in host.failures):
            return "[swe_gym: the episode is over; nothing ran]"
        observation, reward, terminated, truncated, info = await host.call_async(
            host.act(key, {"name": name, "arguments": arguments})
        )
        if terminated or truncated:
            self._outcomes[key] = Outcome.of(reward, info)
            await host.call_async(host.end(key))
        return observation

    async def verify(self, request: Request, body: SweGymVerifyRequest) -> SweGymVerifyResponse:
        key = request.session[SESSION_ID_KEY]
        outcome = await self._outcome(key)
        fields = body.model_dump() | {"instance_id": body.instance_id}
        if outcome is None:
            reason = "no swe_gym episode for this session (never seeded here, or the server restarted)"
            return SweGymVerifyResponse(
                **fields, reward=0.0, mask_sample=True, failure_kind=SESSION_LOST, failure_reason=reason
            )
        return SweGymVerifyResponse(
            **fields,
            reward=outcome.reward,
            resolved=outcome.resolved,
            patch=outcome.patch,
            mask_sample=outcome.masked,
            failure_kind=PROVIDER_UNAVAILABLE if outcome.masked else None,
            failure_reason=outcome.masked_reason,
        )

    async def _outcome(self, key: str) -> Outcome | None:
        """The episode's outcome (graded now if the model left it running); its sandboxes are removed."""
        host = self.host
        try:
            if key in self._outcomes:
                return self._outcomes.pop(key)
            episode = host.episode(key)
            if episode is not None and not episode.done:
                _, reward, _, _, info = await host.call_async(episode.truncate("", {"step": episode.steps}))
                return Outcome.of(reward, info)
            if key in host.failures:  # its start failed: the step that ends it says how
                _, reward, _, _, info = host.failures[key].step(host.config.max_observation_chars)
                return Outcome.of(reward, info)
            return None
        finally:
            await host.call_async(host.end(key))

    async def close_resources_session(self, body: ResourcesCloseSessionRequest) -> ResourcesCloseSessionResponse:
        self._outcomes.pop(body.resources_session_id, None)
        await self.host.call_async(self.host.end(body.resources_session_id))
        return ResourcesCloseSessionResponse(resources_session_id=body.resources_session_id)
