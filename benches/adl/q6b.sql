-- ADL Q6b: in events with at least three jets, the largest b-tagging
-- discriminant among the three jets of the trijet whose invariant mass is
-- closest to 172.5 GeV (the first such triple in index order on a tie).
WITH scored AS (
  SELECT Jet_btag AS btag, triples(nJet) AS t,
         array_transform(triples(nJet), c -> abs(inv_mass(
             Jet_pt[c['i']], Jet_eta[c['i']], Jet_phi[c['i']], Jet_mass[c['i']],
             Jet_pt[c['j']], Jet_eta[c['j']], Jet_phi[c['j']], Jet_mass[c['j']],
             Jet_pt[c['k']], Jet_eta[c['k']], Jet_phi[c['k']], Jet_mass[c['k']]) - 172.5)) AS d
  FROM events
  WHERE nJet >= 3
), best AS (
  SELECT *, t[argmin(d)] AS b FROM scored
)
SELECT CAST(greatest(btag[b['i']], btag[b['j']], btag[b['k']]) AS DOUBLE) AS x
FROM best
