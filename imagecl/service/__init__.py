"""The tuning service (issue 18): `imagecl serve` answers OmniTune's Request, RequestTraining,
Submit and Refuse over HTTP from a results store that several servers may share
(docs/service.md); `client` is what programs and `imagecl tune --service` use."""
