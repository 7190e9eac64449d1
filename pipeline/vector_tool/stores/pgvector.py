"""PostgreSQL + pgvector: one table per index in a schema (one schema per tenant), on any server.

Table ``<schema>.<index>``: ``id text primary key, document text, metadata jsonb, embedding vector(d)``;
similarity is cosine (``1 - (embedding <=> q)``). Options (``database_config["pgvector"]``):
``min_score`` (rows scoring below it are dropped), ``ef`` (``SET LOCAL hnsw.ef_search``: an HNSW scan
returns at most ef rows) and ``probes`` (``SET LOCAL ivfflat.probes``: IVFFlat lists searched). The
``SET LOCAL`` lives in the query's own transaction, so it never leaks into other queries.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from pipeline.vector_tool.filters import compile_filter
from pipeline.vector_tool.stores.base import IndexRows, QueryResult, StoreError, StoreQuery
from pipeline.vector_tool.stores.writable import StoreRows, WritableStoreBase

OPTIONS = {"min_score", "ef", "probes"}
_NAME = re.compile(r"^[a-z0-9_][a-z0-9_-]{0,62}$")  # a namespace name fits (quoted)


def _name(kind: str, value: str) -> str:
    if not _NAME.match(value):
        raise StoreError(
            f"pgvector: invalid {kind} name {value!r} (lower-case letters, digits, '_', '-'; at most 63)"
        )
    return value


def _vector_text(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PgVectorStore(WritableStoreBase):
    store_type = "pgvector"
    known_options = OPTIONS

    def __init__(self, dsn: str, schema: str = "public") -> None:
        self.dsn = dsn
        self.schema = _name("schema", schema)
        self._conn: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PgVectorStore(schema={self.schema!r})"  # the DSN may hold a password

    @property
    def identity(self) -> str:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(self.dsn)
        where = f"{info.get('host', '')}:{info.get('port', '')}/{info.get('dbname', '')}"
        return f"pgvector:{where}/{self.schema}"

    # ---- connection ---------------------------------------------------------------------------
    def _connect(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.dsn)
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _run(self, fn: Any) -> Any:
        import psycopg

        with self._lock:
            conn = self._connect()
            try:
                with conn.transaction():
                    return fn(conn)
            except psycopg.errors.UndefinedTable as exc:
                raise StoreError(f"pgvector: no such index in schema {self.schema!r}: {exc}") from exc
            except psycopg.Error as exc:
                raise StoreError(f"pgvector: {type(exc).__name__}: {exc}") from exc

    def _table(self, index_name: str) -> Any:
        from psycopg import sql

        return sql.Identifier(self.schema, _name("index", index_name))

    # ---- writing ------------------------------------------------------------------------------
    def create_index(
        self,
        index_name: str,
        dimension: int,
        *,
        index_type: Literal["none", "hnsw", "ivfflat"] = "hnsw",
        lists: int = 100,
    ) -> None:
        """Create the schema, table and ANN index if missing (``CREATE EXTENSION vector`` too)."""
        from psycopg import sql

        table = self._table(index_name)

        def work(conn: Any) -> None:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} (id text PRIMARY KEY, document text, "
                    "metadata jsonb NOT NULL DEFAULT '{{}}', embedding vector({}) NOT NULL)"
                ).format(table, sql.Literal(int(dimension)))
            )
            if index_type != "none":
                using = sql.SQL("hnsw") if index_type == "hnsw" else sql.SQL("ivfflat")
                with_ = (
                    sql.SQL("")
                    if index_type == "hnsw"
                    else sql.SQL(" WITH (lists = {})").format(sql.Literal(int(lists)))
                )
                conn.execute(
                    sql.SQL(
                        "CREATE INDEX IF NOT EXISTS {} ON {} USING {} (embedding vector_cosine_ops){}"
                    ).format(sql.Identifier(f"{index_name}_{index_type}"), table, using, with_)
                )

        self._run(work)

    def _upsert(self, index_name: str, given: StoreRows) -> int:
        from psycopg import sql

        metadata, documents = given.metadata, given.documents
        rows = [
            (
                i,
                documents[n] if documents is not None else None,
                json.dumps(dict(metadata[n]) if metadata is not None else {}, default=str),
                _vector_text(given.vectors[n]),
            )
            for n, i in enumerate(given.ids)
        ]
        query = sql.SQL(
            "INSERT INTO {} (id, document, metadata, embedding) VALUES (%s, %s, %s::jsonb, %s::vector) "
            "ON CONFLICT (id) DO UPDATE SET document = EXCLUDED.document, metadata = EXCLUDED.metadata, "
            "embedding = EXCLUDED.embedding"
        ).format(self._table(index_name))

        def work(conn: Any) -> int:
            with conn.cursor() as cur:
                cur.executemany(query, rows)
            return len(rows)

        return self._run(work)

    def delete_except(self, index_name: str, keep_ids: Sequence[str]) -> int:
        """Delete the rows whose id is not in ``keep_ids``; returns how many went."""
        from psycopg import sql

        query = sql.SQL("DELETE FROM {} WHERE NOT (id = ANY(%s))").format(self._table(index_name))
        return self._run(lambda conn: conn.execute(query, [list(map(str, keep_ids))]).rowcount)

    # ---- reading ------------------------------------------------------------------------------
    def _where(self, conn: Any, filter: Mapping[str, Any] | None) -> Any:
        from psycopg import sql

        if not filter:
            return sql.SQL("true")

        def lit(value: Any) -> str:
            return sql.Literal(value).as_string(conn)

        def condition(field: str, op: str, operand: Any) -> str:
            key, value = lit(field), f"(metadata -> {lit(field)})"
            if op in ("$eq", "$ne"):
                if operand is None:
                    test = f"({value} IS NULL OR {value} = 'null'::jsonb)"
                else:
                    test = f"(metadata @> {lit(json.dumps({field: operand}))}::jsonb)"
                return test if op == "$eq" else f"NOT {test}"
            if op in ("$in", "$nin"):
                alts = [f"(metadata @> {lit(json.dumps({field: v}))}::jsonb)" for v in operand] or ["false"]
                test = "(" + " OR ".join(alts) + ")"
                return test if op == "$in" else f"NOT {test}"
            sql_op = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
            if isinstance(operand, int | float) and not isinstance(operand, bool):
                return (
                    f"(jsonb_typeof({value}) = 'number' AND "
                    f"(metadata ->> {key})::double precision {sql_op} {lit(float(operand))})"
                )
            return f"(jsonb_typeof({value}) = 'string' AND (metadata ->> {key}) {sql_op} {lit(str(operand))})"

        def join(word: str, parts: list[str]) -> str:
            return "(" + f" {word} ".join(parts) + ")" if parts else "true"

        # Literals are quoted by the connection's rules; '%' is doubled as the query also takes parameters.
        return sql.SQL(compile_filter(filter, condition, join).replace("%", "%%"))

    def _result(self, row: tuple, include_vector: bool) -> QueryResult:
        rid, document, metadata, score, embedding = row
        return QueryResult(
            id=rid,
            score=float(score),
            metadata=dict(metadata or {}),
            vector=json.loads(embedding) if include_vector and embedding is not None else None,
            document=document,
        )

    def _query(self, q: StoreQuery) -> list[QueryResult]:
        from psycopg import sql

        p = q.options
        vector = _vector_text(q.vector)
        embedding = sql.SQL("embedding::text" if q.include_vector else "NULL")

        def work(conn: Any) -> list[QueryResult]:
            if p.get("ef") is not None:
                conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(int(p["ef"]))))
            if p.get("probes") is not None:
                conn.execute(sql.SQL("SET LOCAL ivfflat.probes = {}").format(sql.Literal(int(p["probes"]))))
            # min_score filters outside the ORDER BY ... LIMIT so the ANN index still drives the scan.
            query = sql.SQL(
                "SELECT * FROM (SELECT id, document, metadata, 1 - (embedding <=> %(q)s::vector) AS score, "
                "{emb} FROM {table} WHERE {where} ORDER BY embedding <=> %(q)s::vector LIMIT %(k)s) hits "
                "WHERE %(min)s::float8 IS NULL OR score >= %(min)s::float8 ORDER BY score DESC"
            ).format(emb=embedding, table=self._table(q.index_name), where=self._where(conn, q.filter))
            args = {"q": vector, "k": int(q.top_k), "min": p.get("min_score")}
            return [self._result(r, q.include_vector) for r in conn.execute(query, args).fetchall()]

        return self._run(work)

    def text_query(
        self, index_name: str, query_text: str, top_k: int, *, filter: Mapping[str, Any] | None = None
    ) -> list[QueryResult]:
        from psycopg import sql

        def work(conn: Any) -> list[QueryResult]:
            query = sql.SQL(
                "SELECT id, document, metadata, ts_rank(to_tsvector('english', coalesce(document, '')), q) "
                "AS score, NULL FROM {table}, plainto_tsquery('english', %(t)s) q "
                "WHERE to_tsvector('english', coalesce(document, '')) @@ q AND {where} "
                "ORDER BY score DESC, id LIMIT %(k)s"
            ).format(table=self._table(index_name), where=self._where(conn, filter))
            return [self._result(r, False) for r in conn.execute(query, {"t": query_text, "k": int(top_k)})]

        return self._run(work)

    def index_rows(self, index_name: str) -> IndexRows:
        from psycopg import sql

        def work(conn: Any) -> list[tuple]:
            query = sql.SQL("SELECT id, document, metadata, embedding::text FROM {} ORDER BY id")
            return conn.execute(query.format(self._table(index_name))).fetchall()

        rows = self._run(work)
        vectors = np.asarray([json.loads(r[3]) for r in rows], dtype=np.float32)
        return IndexRows(
            ids=[r[0] for r in rows],
            documents=[r[1] or "" for r in rows],
            metadata=[dict(r[2] or {}) for r in rows],
            vectors=vectors.reshape(len(rows), -1) if rows else np.zeros((0, 1), np.float32),
        )

    def index_fingerprint(self, index_name: str) -> str:
        from psycopg import sql

        def work(conn: Any) -> tuple:
            query = sql.SQL(
                "SELECT count(*), md5(coalesce(string_agg(md5(id || coalesce(document, '') || "
                "metadata::text || embedding::text), '' ORDER BY id), '')) FROM {}"
            )
            return conn.execute(query.format(self._table(index_name))).fetchone()

        count, digest = self._run(work)
        return f"{self.identity}/{index_name}#{count}:{digest}"
