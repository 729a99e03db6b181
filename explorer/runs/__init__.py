"""The run subsystem: live training runs, their places and line, recordings, watch channels and the run stores.

Imports `transformer_core`, NumPy, `explorer.render` and `explorer.i18n`; `redis` only once a
`redis_store.RedisStore` is made. Never Streamlit, and no other `explorer` package: lessons and pages build on runs,
not the other way round.
"""
