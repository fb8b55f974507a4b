"""Alembic environment for ``causalplay serve``: runs on the connection :func:`causalplay.serve.store.upgrade`
passes in (``config.attributes["connection"]``), or on ``sqlalchemy.url`` when run by the alembic CLI."""

from alembic import context
from sqlalchemy import create_engine

from causalplay.serve.store import Base

target_metadata = Base.metadata


def run_migrations_online() -> None:
    conn = context.config.attributes.get("connection")
    if conn is not None:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
    with engine.begin() as c:
        context.configure(connection=c, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    context.configure(url=context.config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
