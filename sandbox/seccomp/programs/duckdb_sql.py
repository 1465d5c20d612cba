# DuckDB as the system prompt tells the model to use it: SQL over CSV, Parquet
# and JSON files, a streamed aggregation that spills to /tmp under a small
# memory_limit, results fetched as a DataFrame, and the failures of a sandbox
# with no network (an extension that is not built in, a remote file).
import json, os
import duckdb
import numpy as np
import pandas as pd

rng = np.random.default_rng(7)
n = 200_000
pd.DataFrame({"day": rng.integers(0, 365, n), "store": rng.integers(0, 50, n),
              "amount": rng.random(n) * 100}).to_csv("/tmp/sales.csv", index=False)
with open("/tmp/events.jsonl", "w") as fh:
    for i in range(2000):
        fh.write(json.dumps({"id": i, "kind": ["a", "b", "c"][i % 3], "v": i * 0.5}) + "\n")

con = duckdb.connect(config={"memory_limit": "64MB", "threads": 2,
                             "temp_directory": "/tmp/duckdb_spill",
                             "autoinstall_known_extensions": False})
print(con.sql("SELECT current_setting('threads'), current_setting('memory_limit')").fetchall())
by_store = con.sql("""SELECT store, count(*) AS n, sum(amount) AS total, avg(amount) AS mean
                      FROM read_csv('/tmp/sales.csv') GROUP BY store ORDER BY store""").df()
con.execute("COPY (SELECT * FROM read_csv('/tmp/sales.csv')) TO '/tmp/sales.parquet' (FORMAT parquet)")
pq = con.execute("SELECT day, sum(amount) FROM read_parquet('/tmp/sales.parquet') GROUP BY day ORDER BY 2 DESC LIMIT 3").fetchall()
js = con.sql("SELECT kind, sum(v) FROM read_json('/tmp/events.jsonl') GROUP BY kind ORDER BY kind").fetchall()
# Larger than memory_limit: the sort and the hash join spill to temp_directory.
big = con.sql("""SELECT count(*), sum(a.amount * b.amount) FROM
                 (SELECT *, row_number() OVER (ORDER BY amount) AS r FROM read_parquet('/tmp/sales.parquet')) a
                 JOIN (SELECT *, row_number() OVER (ORDER BY amount DESC) AS r FROM read_parquet('/tmp/sales.parquet')) b
                 USING (r)""").fetchall()
con.execute("COPY (SELECT store, sum(amount) AS total FROM '/tmp/sales.parquet' GROUP BY store) TO '/out/by_store.csv' (HEADER)")
rel = con.sql("SELECT * FROM by_store WHERE n > 0")  # a pandas DataFrame by name
print(rel.limit(1).fetchall(), len(rel.fetchnumpy()["store"]))
for bad in ("INSTALL httpfs", "SELECT * FROM read_csv('https://example.com/x.csv')",
            "SELECT * FROM read_parquet('/data/missing.parquet')"):
    try:
        con.execute(bad)
    except duckdb.Error as e:
        print(type(e).__name__, str(e)[:80])
print(duckdb.sql("SELECT 1 + 1").fetchall())  # the default connection
con.close()
print(json.dumps({"stores": len(by_store), "top": pq[0][0], "json": js, "big": big[0][0],
                  "tmp": sorted(os.listdir("/tmp"))}))
