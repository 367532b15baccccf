-- ADL Q4: the missing transverse momentum of events with at least two jets above 40 GeV.
SELECT CAST(MET_pt AS DOUBLE) AS x
FROM events
WHERE cardinality(array_filter(Jet_pt, pt -> pt > 40)) >= 2
