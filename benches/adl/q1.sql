-- ADL Q1: the missing transverse momentum of every event.
SELECT CAST(MET_pt AS DOUBLE) AS x
FROM events
