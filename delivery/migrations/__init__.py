"""Versioned SQL migrations, applied in order by :mod:`delivery.migrate`.

Add a file ``NNNN_short_name.sql`` (the next number, four digits or more) and it
is picked up: nothing else to register.  A migration that has been applied
anywhere is never edited again; fix it with a new migration.
"""
