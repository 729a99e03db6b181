"""The run subsystem: live training runs, their places and line, recordings, watch channels and the run stores.

Imports `transformer_core`, NumPy and `explorer.render`; `redis` only inside `redis_store.RedisStore`. Never
Streamlit, and no other `explorer` package: lessons and pages build on runs, not the other way round.
"""
