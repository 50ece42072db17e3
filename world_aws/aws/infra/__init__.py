"""Provisioning the resources ``template.yaml`` declares, on any endpoint (moto locally, or real AWS).

``template.yaml`` ships inside this package (package data), so the embedded default
works from an installed wheel: :data:`world_aws.aws.infra.template.DEFAULT_TEMPLATE`.
"""
