-- ADL Q2: the transverse momentum of every jet.
SELECT CAST(unnest(Jet_pt) AS DOUBLE) AS x
FROM events
