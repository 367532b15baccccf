-- ADL Q5: the missing transverse momentum of events with an opposite-charge
-- muon pair of invariant mass between 60 and 120 GeV.
-- The muons' four-vectors (p4) are gathered with list_select over whole batches; the
-- lambdas see only their own element (no captured list columns).
WITH p AS (
  SELECT MET_pt, Muon_charge AS q, p4(Muon_pt, Muon_eta, Muon_phi, Muon_mass) AS v,
         array_transform(pairs(nMuon), c -> c['i']) AS i,
         array_transform(pairs(nMuon), c -> c['j']) AS j
  FROM events
  WHERE nMuon >= 2
)
SELECT CAST(MET_pt AS DOUBLE) AS x
FROM p
WHERE any_match(
        arrays_zip(list_select(q, i), list_select(q, j),
                   inv_mass(list_select(v, i), list_select(v, j))),
        z -> z['1'] <> z['2'] AND z['3'] BETWEEN 60 AND 120)
