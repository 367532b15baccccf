-- ADL Q6b: in events with at least three jets, the largest b-tagging
-- discriminant among the three jets of the trijet whose invariant mass is
-- closest to 172.5 GeV (the first such triple in index order on a tie).
-- Each jet's four-vector is computed once (p4) and gathered for every
-- triple with list_select; the functions then work on whole lists of
-- triples, and argmin picks each event's best one.
WITH jets AS (
  SELECT Jet_btag AS btag, p4(Jet_pt, Jet_eta, Jet_phi, Jet_mass) AS v, triples(nJet) AS t
  FROM events
  WHERE nJet >= 3
), combos AS (
  SELECT btag, v,
         array_transform(t, c -> c['i']) AS i,
         array_transform(t, c -> c['j']) AS j,
         array_transform(t, c -> c['k']) AS k
  FROM jets
), scored AS (
  SELECT *, argmin(array_transform(inv_mass(list_select(v, i), list_select(v, j), list_select(v, k)),
                                   m -> abs(m - 172.5))) AS b
  FROM combos
), best AS (
  -- the three jets of the best triple
  SELECT v, btag, make_array(i[b], j[b], k[b]) AS jets3 FROM scored
)
SELECT CAST(array_max(list_select(btag, jets3)) AS DOUBLE) AS x
FROM best
