#!/usr/bin/python3
# The sqlite3 module with a database file.
import sqlite3
db = sqlite3.connect("test.db")
db.execute("create table t (k integer primary key, v text)")
db.executemany("insert into t (v) values (?)", [(str(i) * 3,) for i in range(500)])
db.commit()
print(db.execute("select count(*), sum(length(v)), max(k) from t").fetchone())
